package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"forumstats.local/tools/bench"
	"forumstats.local/tools/stack"
)

// benchEnv is forum-svc serving a database of users paired in conversations, with a super key.
type benchEnv struct {
	svc      *stack.Service
	superKey string
	users    int // users 1..users; conversation k holds users 2k-1 and 2k
	bench.Cleanups
}

// serviceEnv: the rate limit never refuses (one key opens every stream) and request logs are off,
// as in the other benches.
var serviceEnv = []string{"RATE_LIMIT_PER_MINUTE=1073741824", "RATE_LIMIT_BURST=1073741824", "LOG_LEVEL=warn"}

// fdMargin is the descriptors a process needs beside its streams (database pool, listeners, files).
const fdMargin = 1024

// raiseFDLimit sets this process's RLIMIT_NOFILE to its hard limit (the children inherit it) and
// fails when that cannot hold need descriptors.
func raiseFDLimit(need uint64) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return fmt.Errorf("getrlimit: %w", err)
	}
	if l.Max < need {
		return fmt.Errorf("the descriptor limit (ulimit -Hn) is %d, the bench needs %d: raise it (limits.conf, "+
			"systemd LimitNOFILE, docker --ulimit nofile) or lower -streams", l.Max, need)
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return fmt.Errorf("setrlimit NOFILE %d: %w", l.Max, err)
		}
	}
	return nil
}

// convOf is the conversation of user u; participants the users of conversation c.
func convOf(u int64) int64          { return (u + 1) / 2 }
func participants(c int64) [2]int64 { return [2]int64{2*c - 1, 2 * c} }
func conversations(users int) int64 { return int64(users / 2) }
func firstMessage(c int64) int64    { return 1_000_000 + c }
func newSuperKey() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return "events-bench-super-" + base64.RawURLEncoding.EncodeToString(b[:])
}

// seedJSON is the seed file (forum-svc/README.md, Seed file): users 1..users, conversation k of
// users 2k-1 and 2k with one message, and the super key.
func seedJSON(users int, superKey string) ([]byte, error) {
	const base = 1767225600 // 2026-01-01T00:00:00Z
	us := make([]stack.SeedUser, 0, users)
	for i := 1; i <= users; i++ {
		us = append(us, stack.SeedUser{UserID: int64(i), Username: "user" + strconv.Itoa(i)})
	}
	var cs []stack.SeedConversation
	for c := int64(1); c <= conversations(users); c++ {
		p := participants(c)
		cs = append(cs, stack.SeedConversation{ConversationID: c, Title: "Conversation " + strconv.FormatInt(c, 10), UserID: p[0],
			Recipients: []int64{p[1]}, Messages: []stack.SeedMessage{{MessageID: firstMessage(c), UserID: p[0], Message: "First message.", MessageDate: base}}})
	}
	return json.Marshal(map[string]any{
		"options":       map[string]any{"messagesPerPage": 20},
		"users":         us,
		"conversations": cs,
		"api_keys":      []stack.SeedKey{{Key: superKey, Type: "super", Scopes: []string{"conversation:read", "conversation:write"}, Active: true}},
	})
}

func setup(ctx context.Context, o options) (_ *benchEnv, err error) {
	if err := raiseFDLimit(uint64(o.streams + fdMargin)); err != nil {
		return nil, err
	}
	e := &benchEnv{superKey: newSuperKey(), users: o.streams / o.perUser}
	defer e.CloseOnError(&err)
	bin, _, env, err := e.Prepare(ctx, stack.Forum, o.Flags)
	if err != nil {
		return nil, err
	}
	data, err := seedJSON(e.users, e.superKey)
	if err != nil {
		return nil, err
	}
	dir, err := stack.TempDir("events-bench-seed")
	if err != nil {
		return nil, err
	}
	e.Add(func() { _ = os.RemoveAll(dir) })
	file, err := stack.WriteTemp(dir, "seed-*.json", data)
	if err != nil {
		return nil, err
	}
	if out, err := stack.Run(ctx, 5*time.Minute, bin, env, "seed", "--file", file); err != nil {
		return nil, fmt.Errorf("forum-svc seed: %w\n%s", err, out)
	}
	svcEnv := append(env, serviceEnv...)
	if o.redis {
		r, err := stack.NewRedis(ctx)
		if err != nil {
			return nil, err
		}
		e.Add(r.Close)
		svcEnv = append(svcEnv, "REDIS_URL="+r.URL())
	}
	if e.svc, err = e.StartService(stack.Forum, bin, svcEnv); err != nil {
		return nil, err
	}
	fmt.Printf("database %s: %d users, %d conversations of two; forum-svc pid %d at %s, private Redis %v\n",
		o.DB, e.users, conversations(e.users), e.svc.Pid(), e.svc.URL, o.redis)
	return e, nil
}

// checkFDLimit reads pid's soft descriptor limit from /proc and fails when it cannot hold need:
// a child inherits the bench's limit, unless something between lowered it.
func checkFDLimit(pid int, need int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return err
	}
	limit, err := softLimit(string(b), "Max open files")
	if err != nil {
		return fmt.Errorf("/proc/%d/limits: %w", pid, err)
	}
	if limit >= 0 && limit < int64(need) {
		return fmt.Errorf("process %d may open %d descriptors, the bench needs %d: raise its limit (ulimit -n) or lower -streams", pid, limit, need)
	}
	return nil
}

// softLimit reads the soft limit of the row name of a /proc/PID/limits text; -1 when unlimited.
func softLimit(limits, name string) (int64, error) {
	for _, line := range strings.Split(limits, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			break
		}
		if fields[0] == "unlimited" {
			return -1, nil
		}
		return strconv.ParseInt(fields[0], 10, 64)
	}
	return 0, fmt.Errorf("no %q row", name)
}
