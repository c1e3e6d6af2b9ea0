module forumstats.local/deploy

go 1.26.0
