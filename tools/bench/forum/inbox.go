package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The conversation list of a user in o.conversations conversations: the first and the last page's
// median latencies, and the plans of the list's statements as the service sent them, which must
// read conversation_participants_inbox in the list's order and sort nothing bigger than a page.

const listPath = "/api/conversations/?page="

// listResults are the list's figures.
type listResults struct {
	lastPageNo          int
	firstPage, lastPage time.Duration // median latencies
	plans               []planCheck
}

// planCheck is what the plan of one of the list's statements read and sorted.
type planCheck struct {
	name        string
	inboxIndex  bool  // read conversation_participants_inbox
	seqScan     bool  // read conversation_participants whole
	largestSort int64 // rows of the largest sort (0: none)
}

func (p planCheck) ok() bool { return p.inboxIndex && !p.seqScan && p.largestSort <= perPage }

func (p planCheck) String() string {
	s := "no index"
	if p.inboxIndex {
		s = "conversation_participants_inbox"
	}
	if p.seqScan {
		s += ", a sequential scan of conversation_participants"
	}
	if p.largestSort == 0 {
		return s + ", no sort"
	}
	return s + fmt.Sprintf(", largest sort %d rows", p.largestSort)
}

// listRoles are the statements of a list request: the list's own (store.ListConversations), with
// their parameters for the last page (user 1's count, and the page's rows skipped to by OFFSET),
// then the page's recipients.
func listRoles(lastPage int) []role {
	uid := strconv.Itoa(userID)
	return withHousekeeping([]role{
		{name: "count", marker: "SELECT COUNT(*), (SELECT discussions_per_page FROM forum_options)", params: []string{uid}},
		{name: "page", marker: "LIMIT $2 OFFSET $3", params: []string{uid, strconv.Itoa(perPage), strconv.Itoa((lastPage - 1) * perPage), uid}},
		{name: "recipients", marker: "WHERE p.conversation_id IN (", many: true},
	})
}

func measureList(ctx context.Context, e *benchEnv, samples int) (listResults, error) {
	r := listResults{lastPageNo: e.listPages}
	client := &http.Client{}
	urls := []string{e.svc.URL + listPath + "1", e.svc.URL + listPath + strconv.Itoa(e.listPages)}
	// The statements, from a short run of both pages.
	statements, err := sampleStatements(ctx, e.dbURL, func() error {
		for i := 0; i < 200; i++ {
			if _, err := get(client, urls[i%2], e.key); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	roles := listRoles(e.listPages)
	ordered, err := matchRoles(statements, roles)
	if err != nil {
		return r, err
	}
	for i, role := range roles[:2] {
		p, err := explain(ctx, e.dbURL, ordered[i], role.params)
		if err != nil {
			return r, fmt.Errorf("explain the list's %s: %w", role.name, err)
		}
		p.name = role.name
		r.plans = append(r.plans, p)
	}
	ms, err := medians(e.key, urls, samples)
	if err != nil {
		return r, err
	}
	r.firstPage, r.lastPage = ms[0], ms[1]
	return r, nil
}

// explain runs statement with args under EXPLAIN ANALYZE and reads its plan.
func explain(ctx context.Context, dbURL, statement string, args []string) (planCheck, error) {
	var p planCheck
	conn, err := sql.Open("pgx", dbURL)
	if err != nil {
		return p, err
	}
	defer conn.Close()
	c, err := conn.Conn(ctx)
	if err != nil {
		return p, err
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "PREPARE bench_list AS "+statement); err != nil {
		return p, err
	}
	var out string
	q := "EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE bench_list(" + strings.Join(args, ", ") + ")"
	if err := c.QueryRowContext(ctx, q).Scan(&out); err != nil {
		return p, err
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
		return p, fmt.Errorf("EXPLAIN output: %v: %.200s", err, out)
	}
	plans[0].Plan.walk(func(n planNode) {
		switch {
		case n.IndexName == "conversation_participants_inbox":
			p.inboxIndex = true
		case n.NodeType == "Seq Scan" && n.RelationName == "conversation_participants":
			p.seqScan = true
		case n.NodeType == "Sort":
			p.largestSort = max(p.largestSort, n.ActualRows)
		}
	})
	return p, nil
}

// planNode is the part of PostgreSQL's JSON plan the bench reads.
type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	ActualRows   int64      `json:"Actual Rows"`
	Plans        []planNode `json:"Plans"`
}

func (n planNode) walk(f func(planNode)) {
	f(n)
	for _, c := range n.Plans {
		c.walk(f)
	}
}
