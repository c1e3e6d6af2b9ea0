module forumstats.local/forum-svc

go 1.26.0
