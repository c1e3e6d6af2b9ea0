module forumstats.local/stats-svc

go 1.26.0
