package main

import (
	"fmt"
	"runtime"
	"strings"
	"time"

	"forumstats.local/tools/bench"
	"forumstats.local/tools/stack"
)

// The targets (forum-svc/README.md, "Tests and benchmark").
const (
	maxLatencyRatio     = 1.5  // last page / first page, medians
	minThroughputRatio  = 0.50 // HTTP requests/s / pgbench transactions/s
	maxListLatencyRatio = 3.0  // the conversation list's last page / first page, medians
	minReplyOneRatio    = 0.50 // replies into one conversation: HTTP requests/s / pgbench tps
	minReplyManyRatio   = 0.70 // replies into replyConvs conversations
	minReactRatio       = 0.70 // reactions: HTTP requests/s / pgbench tps
	minAttachRatio      = 0.50 // attachments: HTTP MiB/s / pgx MiB/s, each way
	maxAttachRSSGrowth  = 8 << 20
)

// report turns the results into the figures, each beside its target.
func report(r results, o options) *bench.Report {
	fmt.Printf("\nmachine: %d CPUs; %d latency samples per page; %d clients, %d rounds of %s each side\n",
		runtime.NumCPU(), o.samples, o.clients, o.rounds, o.round)
	for _, t := range r.runs {
		if len(r.runs) > 1 {
			fmt.Printf("%s:\n", t.name)
		}
		for i := range t.rps {
			fmt.Printf("  round %d: HTTP %.0f requests/s, pgbench %.0f transactions/s: %.2f\n",
				i+1, t.rps[i], t.tps[i], t.rps[i]/t.tps[i])
		}
	}
	fmt.Printf("pgbench script (the statement each request runs, as the service sent it):\n    %s\n",
		strings.ReplaceAll(strings.TrimSpace(r.script), "\n", "\n    "))

	for _, sc := range r.replies {
		fmt.Printf("replies, %s:\n", sc.name)
		for i := range sc.run.rps {
			fmt.Printf("  round %d: HTTP %.0f replies/s, pgbench %.0f transactions/s: %.2f\n",
				i+1, sc.run.rps[i], sc.run.tps[i], sc.run.rps[i]/sc.run.tps[i])
		}
	}
	fmt.Printf("pgbench script of a reply (the statements the service ran for one, in its order):\n    %s\n",
		strings.ReplaceAll(strings.TrimSpace(r.replyScript), "\n", "\n    "))

	fmt.Println("reactions:")
	for i := range r.reactions.rps {
		fmt.Printf("  round %d: HTTP %.0f reactions/s, pgbench %.0f transactions/s: %.2f\n",
			i+1, r.reactions.rps[i], r.reactions.tps[i], r.reactions.rps[i]/r.reactions.tps[i])
	}
	fmt.Printf("pgbench script of a reaction (the statements the service ran for one, in its order):\n    %s\n",
		strings.ReplaceAll(strings.TrimSpace(r.reactScript), "\n", "\n    "))
	fmt.Printf("attachments (%s files, MiB/s):\n", stack.MiB(attachFileSize))
	for i := range r.attach.upHTTP {
		fmt.Printf("  round %d: upload HTTP %.1f, pgx %.1f: %.2f; download HTTP %.1f, pgx %.1f: %.2f\n", i+1,
			r.attach.upHTTP[i], r.attach.upPgx[i], r.attach.upHTTP[i]/r.attach.upPgx[i],
			r.attach.downHTTP[i], r.attach.downPgx[i], r.attach.downHTTP[i]/r.attach.downPgx[i])
	}

	rep := &bench.Report{Title: fmt.Sprintf("forum-svc: 1 conversation of %d messages; a user in %d conversations", o.messages, o.conversations)}
	own := r.runs[0]
	latencyRatio := float64(own.lastPage) / float64(own.firstPage)
	rep.Add("first page latency, median", us(own.firstPage), "", true)
	rep.Add(fmt.Sprintf("last page (%d) latency, median", r.lastPageNo), us(own.lastPage), "", true)
	rep.Add("last/first page latency", fmt.Sprintf("%.2f", latencyRatio),
		fmt.Sprintf("≤ %.1f", maxLatencyRatio), latencyRatio <= maxLatencyRatio)
	rep.Add("HTTP page requests/s, mean of rounds", fmt.Sprintf("%.0f", mean(own.rps)), fmt.Sprintf("pgbench %.0f tps", mean(own.tps)), true)
	rep.Add("HTTP/pgbench throughput", fmt.Sprintf("%.2f", own.ratio()),
		fmt.Sprintf("≥ %.2f", minThroughputRatio), own.ratio() >= minThroughputRatio)
	rep.Add("CPU per request: service", cpu(own.serviceCPU), "", true)
	rep.Add("CPU per request: load generator", cpu(own.loadCPU), "", true)

	listRatio := float64(r.list.lastPage) / float64(r.list.firstPage)
	rep.Add("conversation list: first page latency, median", us(r.list.firstPage), "", true)
	rep.Add(fmt.Sprintf("conversation list: last page (%d) latency, median", r.list.lastPageNo), us(r.list.lastPage), "", true)
	rep.Add("conversation list: last/first page latency", fmt.Sprintf("%.2f", listRatio),
		fmt.Sprintf("≤ %.1f", maxListLatencyRatio), listRatio <= maxListLatencyRatio)
	for _, p := range r.list.plans {
		rep.Add("conversation list: plan of the "+p.name+" (last page)", p.String(),
			fmt.Sprintf("the inbox index, no sort > %d rows", perPage), p.ok())
	}
	for _, sc := range r.replies {
		t := sc.run
		rep.Add("replies, "+sc.name+": HTTP replies/s, mean of rounds", fmt.Sprintf("%.0f", mean(t.rps)),
			fmt.Sprintf("pgbench %.0f tps", mean(t.tps)), true)
		rep.Add("replies, "+sc.name+": HTTP/pgbench", fmt.Sprintf("%.2f", t.ratio()),
			fmt.Sprintf("≥ %.2f", sc.min), t.ratio() >= sc.min)
		rep.Add("replies, "+sc.name+": service CPU per reply", cpu(t.serviceCPU), "", true)
	}
	integrity := fmt.Sprintf("%d conversations, %d messages: positions 1..N, counters agree", r.replyConvsChecked, r.replyMessages)
	if r.replyBroken != "" {
		integrity = r.replyBroken
	}
	rep.Add("replies: the conversations afterwards", integrity, "no gap, repeat or stale counter", r.replyBroken == "" && r.replyConvsChecked == replyConvs)
	rep.Add("reactions: HTTP reactions/s, mean of rounds", fmt.Sprintf("%.0f", mean(r.reactions.rps)),
		fmt.Sprintf("pgbench %.0f tps", mean(r.reactions.tps)), true)
	rep.Add("reactions: HTTP/pgbench", fmt.Sprintf("%.2f", r.reactions.ratio()),
		fmt.Sprintf("≥ %.2f", minReactRatio), r.reactions.ratio() >= minReactRatio)
	rep.Add("reactions: service CPU per reaction", cpu(r.reactions.serviceCPU), "", true)
	reacted := fmt.Sprintf("%d messages: reaction_score = their reactions", reactConvs)
	if r.reactBroken != "" {
		reacted = r.reactBroken
	}
	rep.Add("reactions: the messages afterwards", reacted, "no stale score", r.reactBroken == "")
	a := r.attach
	rep.Add("attachments: upload MiB/s, HTTP (mean of rounds)", fmt.Sprintf("%.1f", mean(a.upHTTP)),
		fmt.Sprintf("pgx %.1f", mean(a.upPgx)), true)
	rep.Add("attachments: upload HTTP/pgx", fmt.Sprintf("%.2f", a.upRatio()),
		fmt.Sprintf("≥ %.2f", minAttachRatio), a.upRatio() >= minAttachRatio)
	rep.Add("attachments: download MiB/s, HTTP (mean of rounds)", fmt.Sprintf("%.1f", mean(a.downHTTP)),
		fmt.Sprintf("pgx %.1f", mean(a.downPgx)), true)
	rep.Add("attachments: download HTTP/pgx", fmt.Sprintf("%.2f", a.downRatio()),
		fmt.Sprintf("≥ %.2f", minAttachRatio), a.downRatio() >= minAttachRatio)
	rep.Add(fmt.Sprintf("attachments: service peak RSS growth, %d uploads at once", attachConcurrent),
		fmt.Sprintf("%s (%s → peak %s, %s)", stack.MiB(a.rssGrowth()), stack.MiB(a.rssBefore), stack.MiB(a.rssPeak), a.concurrentTime.Round(time.Millisecond)),
		"< "+stack.MiB(maxAttachRSSGrowth), a.rssGrowth() < maxAttachRSSGrowth)
	// A compared binary is no target: its figures say what this build gains over it.
	for _, t := range r.runs[1:] {
		rep.Add("compared: "+t.name+": HTTP page requests/s", fmt.Sprintf("%.0f", mean(t.rps)),
			fmt.Sprintf("this build %.0f: %+.1f %%", mean(own.rps), 100*(mean(own.rps)/mean(t.rps)-1)), true)
		rep.Add("compared: "+t.name+": HTTP/pgbench", fmt.Sprintf("%.2f", t.ratio()),
			fmt.Sprintf("this build %.2f: %+.1f %%", own.ratio(), 100*(own.ratio()/t.ratio()-1)), true)
		rep.Add("compared: "+t.name+": first/last page latency, median", us(t.firstPage)+" / "+us(t.lastPage),
			fmt.Sprintf("this build %s / %s", us(own.firstPage), us(own.lastPage)), true)
		rep.Add("compared: "+t.name+": service CPU per request", cpu(t.serviceCPU),
			fmt.Sprintf("this build %s", cpu(own.serviceCPU)), true)
	}
	return rep
}

func cpu(d time.Duration) string { return d.Round(100 * time.Nanosecond).String() }

func us(d time.Duration) string { return d.Round(time.Microsecond).String() }
