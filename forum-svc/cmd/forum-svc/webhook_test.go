package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"forumstats.local/forum-svc/internal/webhook"
	"forumstats.local/forum-svc/migrations"
	"forumstats.local/shared/db"
	"forumstats.local/shared/migrate"
)

func TestWebhookCommands(t *testing.T) {
	dbs(t, func(t *testing.T, url string) {
		// add prints the id and a new secret, once; list shows neither secret.
		out, errs, code := command(t, url, "webhook", "add", "--url", "https://hooks.example/forum", "--events", "message_created,conversation.created")
		if code != 0 || !strings.Contains(errs, "shown only this once") {
			t.Fatalf("webhook add: %d %q %q", code, out, errs)
		}
		fields := strings.Fields(out)
		if len(fields) != 2 || fields[0] != "1" {
			t.Fatalf("webhook add printed %q; want the id and the secret", out)
		}
		if _, err := webhook.ParseSecret(fields[1]); err != nil {
			t.Fatalf("printed secret %q: %v", fields[1], err)
		}
		const given = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		if out, errs, code := command(t, url, "webhook", "add", "--url", "http://10.0.0.1:9000/", "--events", "*", "--secret", given); code != 0 || out != "2 "+given+"\n" {
			t.Fatalf("webhook add --secret: %d %q %q", code, out, errs)
		}
		out, errs, code = command(t, url, "webhook", "list")
		if want := "1 active https://hooks.example/forum conversation.created,message.created\n2 active http://10.0.0.1:9000/ *\n"; code != 0 || out != want {
			t.Fatalf("webhook list: %d %q %q; want %q", code, out, errs, want)
		}
		if strings.Contains(out, "whsec_") {
			t.Fatal("list shows a secret")
		}
		if out, _, code := command(t, url, "webhook", "disable", "2"); code != 0 || out != "webhook 2 disabled\n" {
			t.Fatalf("webhook disable: %d %q", code, out)
		}
		if out, _, _ := command(t, url, "webhook", "list"); !strings.Contains(out, "2 disabled") {
			t.Fatalf("list after disable: %q", out)
		}

		// deliveries lists the outbox, newest first; redeliver queues a finished one again.
		gdb, err := migrate.Open(context.Background(), url, nil, true, migrations.Set)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close(gdb)
		if err := gdb.Exec(`INSERT INTO webhook_deliveries (webhook_id, conversation_id, message_id, actor_id, event_type, event_at,
			created_at, state, attempts, next_attempt_at, last_status, last_error, finished_at)
			VALUES (1, 10, 100, 1, 'message.created', 1700000000, 1700000000000, 'dead', 12, 0, 500, 'HTTP 500', 1700086400000),
			(1, 10, 101, 1, 'message.created', 1700000001, 1700000001000, 'pending', 0, 1700000001000, 0, '', 0)`).Error; err != nil {
			t.Fatal(err)
		}
		out, errs, code = command(t, url, "webhook", "deliveries", "--webhook", "1")
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if code != 0 || len(lines) != 2 ||
			!regexp.MustCompile(`^2 pending message.created conversation=10 message=101 attempts=0 status=0 created=2023-11-14T22:13:21Z next=`).MatchString(lines[0]) ||
			!strings.HasPrefix(lines[1], `1 dead message.created conversation=10 message=100 attempts=12 status=500 created=2023-11-14T22:13:20Z error="HTTP 500"`) {
			t.Fatalf("webhook deliveries: %d %q %q", code, out, errs)
		}
		if out, errs, code := command(t, url, "webhook", "redeliver", "--delivery", "1"); code != 0 || out != "delivery 1 queued again\n" {
			t.Fatalf("webhook redeliver: %d %q %q", code, out, errs)
		}
		if out, _, _ := command(t, url, "webhook", "deliveries", "--webhook", "1", "--limit", "1"); strings.Count(out, "\n") != 1 {
			t.Fatalf("--limit 1: %q", out)
		}
		if out, _, _ := command(t, url, "webhook", "deliveries", "--webhook", "1"); !strings.Contains(out, "1 pending") {
			t.Fatalf("after redeliver: %q", out)
		}

		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"webhook", "add", "--events", "*"}, "--url is required"},
			{[]string{"webhook", "add", "--url", "ftp://x/", "--events", "*"}, "not an absolute http or https URL"},
			{[]string{"webhook", "add", "--url", "https://x/", "--events", "message.deleted"}, `unknown event "message.deleted"`},
			{[]string{"webhook", "add", "--url", "https://x/", "--events", "*", "--secret", "nope"}, "--secret"},
			{[]string{"webhook", "disable", "99"}, "webhook 99: not found"},
			{[]string{"webhook", "disable", "x"}, `"x" is not an id`},
			{[]string{"webhook", "deliveries", "--webhook", "99"}, "webhook 99: not found"},
			{[]string{"webhook", "deliveries"}, "--webhook must be a positive integer"},
			{[]string{"webhook", "redeliver", "--delivery", "2"}, "delivery 2 is still pending"},
			{[]string{"webhook", "redeliver", "--delivery", "99"}, "delivery 99: not found"},
			{[]string{"webhook", "rename"}, `unknown command "webhook rename"`},
		} {
			_, errs, code := command(t, url, tc.args...)
			oneLineError(t, errs, code, tc.want)
		}
	})
}
