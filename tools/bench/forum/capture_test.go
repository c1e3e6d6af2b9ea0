package main

import (
	"strings"
	"testing"
)

func TestBindParams(t *testing.T) {
	for _, tc := range []struct {
		name, stmt string
		params     []string
		want       string
		wantErr    string
	}{
		{"each in place, on one line", "SELECT a\n  FROM t WHERE a = $1 AND b = $2", []string{":x", "'y'"}, "SELECT a FROM t WHERE a = :x AND b = 'y'", ""},
		{"repeated", "SELECT $1 + $1", []string{":x"}, "SELECT :x + :x", ""},
		{"two digits", "SELECT $10", []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", ":ten"}, "SELECT :ten", ""},
		{"none", "begin", nil, "begin", ""},
		{"more than the bench knows", "SELECT $1, $2", []string{":x"}, "", "parameter $2"},
		{"fewer than the bench knows", "SELECT $1", []string{":x", ":y"}, "", "1 parameters; the bench knows 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := bindParams(tc.stmt, tc.params)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("bindParams = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func FuzzBindParams(f *testing.F) {
	f.Add("SELECT $1, $2 FROM t WHERE x = $1", 2)
	f.Add("SELECT $0", 1)
	f.Add("$99999999999999999999", 3)
	f.Fuzz(func(t *testing.T, stmt string, n int) {
		if n < 0 || n > 20 {
			return
		}
		params := make([]string, n)
		for i := range params {
			params[i] = ":p"
		}
		got, err := bindParams(stmt, params)
		if err == nil && placeholder.MatchString(got) {
			t.Fatalf("bindParams(%q) = %q with no error: a placeholder is left", stmt, got)
		}
	})
}

func TestMatchRoles(t *testing.T) {
	roles := []role{
		{name: "read", marker: "FROM things"},
		{name: "begin", marker: "begin"},
		{name: "list", marker: "IN (", many: true},
		{name: "auth", marker: "FROM keys", cached: true},
	}
	for _, tc := range []struct {
		name       string
		statements []string
		want       []string
		wantErr    string
	}{
		{"a role unseen", []string{"begin", "SELECT a\nFROM things"}, []string{"SELECT a\nFROM things", "begin", "", ""}, "no statement seen for \"list\""},
		{"all", []string{"BEGIN", "SELECT 1 FROM things", "SELECT x IN ($1)", "SELECT k FROM keys"},
			[]string{"SELECT 1 FROM things", "BEGIN", "SELECT x IN ($1)", "SELECT k FROM keys"}, ""},
		{"many plays several", []string{"begin", "SELECT 1 FROM things", "SELECT x IN ($1)", "SELECT x IN ($1, $2)"},
			[]string{"SELECT 1 FROM things", "begin", "SELECT x IN ($1, $2)", ""}, ""},
		{"begin matches whole only", []string{"SELECT begin_date FROM things", "begin_x"}, nil, "does not know"},
		{"unknown", []string{"DELETE FROM other"}, nil, "does not know"},
		{"two for one role", []string{"SELECT 1 FROM things", "SELECT 2 FROM things"}, nil, "two statements play \"read\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := matchRoles(tc.statements, roles)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("matchRoles = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestRolesScript(t *testing.T) {
	roles := []role{
		{name: "insert", marker: "INSERT", params: []string{":conv", "'it''s'"}, gset: true},
		{name: "auth", marker: "FROM keys", cached: true},
		{name: "update", marker: "UPDATE", params: []string{":id"}},
	}
	got, err := rolesScript([]string{"conv 7 + :client_id % 16"},
		[]string{"INSERT INTO t VALUES ($1, $2)\nRETURNING id", "", "UPDATE t SET x = 1 WHERE id = $1"}, roles)
	want := "\\set conv 7 + :client_id % 16\nINSERT INTO t VALUES (:conv, 'it''s') RETURNING id \\gset\nUPDATE t SET x = 1 WHERE id = :id;\n"
	if err != nil || got != want {
		t.Fatalf("rolesScript =\n%s, %v; want\n%s", got, err, want)
	}
	if sqlString("it's") != "'it''s'" {
		t.Fatalf("sqlString(it's) = %s", sqlString("it's"))
	}
}
