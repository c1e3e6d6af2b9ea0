module forumstats.local/collector-svc

go 1.26.0
