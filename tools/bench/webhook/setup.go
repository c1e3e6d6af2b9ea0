package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"forumstats.local/tools/bench"
	"forumstats.local/tools/stack"
)

// benchEnv is forum-svc serving a seeded database, with one webhook (message.created) to a
// local receiver.
type benchEnv struct {
	svc       *stack.Service
	dbURL     string
	fx        stack.ForumFixture
	convs     []int64 // the conversations user 1 replies to
	recv      *stack.HookReceiver
	webhookID int64
	secret    string
	client    *http.Client
	bench.Cleanups
}

// concurrency is the service's WEBHOOK_CONCURRENCY in the bench: its default.
const concurrency = 8

// serviceEnv: the rate limit never refuses and request logs are off (as in the forum bench); the
// deliveries may dial 127.0.0.1; the retry settings are the defaults, as production has them.
var serviceEnv = []string{"RATE_LIMIT_PER_MINUTE=1073741824", "RATE_LIMIT_BURST=1073741824", "LOG_LEVEL=warn",
	"WEBHOOK_ALLOW_PRIVATE=true", "WEBHOOK_CONCURRENCY=" + strconv.Itoa(concurrency)}

func setup(ctx context.Context, o options) (_ *benchEnv, err error) {
	e := &benchEnv{fx: stack.NewForumFixture(30, 20)}
	defer e.CloseOnError(&err)
	bin, dbURL, env, err := e.Prepare(ctx, stack.Forum, o.Flags)
	if err != nil {
		return nil, err
	}
	e.dbURL = dbURL
	data, err := e.fx.SeedJSON()
	if err != nil {
		return nil, err
	}
	dir, err := stack.TempDir("webhook-bench-seed")
	if err != nil {
		return nil, err
	}
	e.Add(func() { _ = os.RemoveAll(dir) })
	file, err := stack.WriteTemp(dir, "seed-*.json", data)
	if err != nil {
		return nil, err
	}
	if out, err := stack.Run(ctx, 2*time.Minute, bin, env, "seed", "--file", file); err != nil {
		return nil, fmt.Errorf("forum-svc seed: %w\n%s", err, out)
	}
	e.convs = []int64{e.fx.Own}
	for i := range e.fx.ExtraConvs {
		e.convs = append(e.convs, e.fx.ExtraOwn+int64(i))
	}
	if e.recv, err = stack.NewHookReceiver(); err != nil {
		return nil, err
	}
	e.Add(e.recv.Close)
	if e.webhookID, e.secret, err = stack.AddWebhook(ctx, bin, env, e.recv.URL(), "message.created"); err != nil {
		return nil, err
	}
	if err := e.recv.SetSecret(e.secret); err != nil {
		return nil, err
	}
	if e.svc, err = e.StartService(stack.Forum, bin, append(env, serviceEnv...)); err != nil {
		return nil, err
	}
	e.client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	fmt.Printf("database %s: user 1 replies to %d conversations; webhook %d (message.created) -> %s\n",
		o.DB, len(e.convs), e.webhookID, e.recv.URL())
	return e, nil
}
