package migratetest

import (
	"slices"
	"testing"
)

func TestCanonicalCheckReadsBothDialectsAlike(t *testing.T) {
	for _, c := range []struct{ postgres, sqlite, want string }{
		{`(number > 0)`, `number > 0`, `number > 0`},
		{`(username <> ''::text)`, `username != ''`, `username <> ''`},
		{`(key_type = ANY (ARRAY['user'::text, 'super'::text]))`, `key_type IN ('user', 'super')`,
			`key_type IN ('user', 'super')`},
		{`((n >= 1) AND (n <= 100))`, `n BETWEEN 1 AND 100`, `(n >= 1) AND (n <= 100)`},
		{`((key_type = 'user'::text) = (user_id IS NOT NULL))`, `(key_type = 'user') = (user_id IS NOT NULL)`,
			`(key_type = 'user') = (user_id IS NOT NULL)`},
		{`(NOT (g ~ '^x$'::text))`, `NOT g ~ '^x$'`, `NOT (g ~ '^x$')`},
		{`(g !~ 'x'::character varying(3)[])`, `NOT (g ~ 'x')`, `NOT (g ~ 'x')`},
		{`(NOT (g GLOB '*'))`, `g NOT GLOB '*'`, `NOT (g GLOB '*')`},
		{`((a + (b * c)) > "Mixed Case")`, `A + B * C > "Mixed Case"`, `(a + (b * c)) > "Mixed Case"`},
		{`(length(s) = 10)`, `LENGTH(s) == 10 -- ten`, `length(s) = 10`},
		{`(a = 'it''s'::text)`, `a = /* quoted */ 'it''s'`, `a = 'it''s'`},
		{`((a OR b) AND c)`, `(a OR b) AND c`, `(a OR b) AND c`},
		{`(x > '-1'::integer)`, `x > '-1'`, `x > '-1'`},
		{`(x > (- y))`, `x > -y`, `x > (-y)`},
	} {
		for _, in := range []string{c.postgres, c.sqlite} {
			got, err := CanonicalCheck(in)
			if err != nil || got != c.want {
				t.Errorf("CanonicalCheck(%q) = %q, %v; want %q", in, got, err, c.want)
			}
		}
	}
}

func TestCanonicalCheckRefusesWhatItCannotRead(t *testing.T) {
	for _, in := range []string{``, `a >`, `(a`, `a)`, `'open`, `a NOT > b`, `a BETWEEN 1`, `f(a,`, `a # b`,
		`x::`, `/* open`, `ARRAY[1`} {
		if got, err := CanonicalCheck(in); err == nil {
			t.Errorf("CanonicalCheck(%q) = %q, want an error", in, got)
		}
	}
}

func TestChecksOfTakesOnlyConstraints(t *testing.T) {
	const createTable = `CREATE TABLE t (
		-- a comment with CHECK (nothing)
		a INTEGER CHECK (a > 0),
		note TEXT DEFAULT 'CHECK (b)',
		check_me TEXT,
		CONSTRAINT named CHECK ((a < 10) OR check_me IS NULL),
		CHECK (f(a, (a)) = 1)
	)`
	got, err := checksOf(createTable, 1)
	want := []string{`a > 0`, `(a < 10) OR (check_me IS NULL)`, `f(a, a) = 1`}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("checksOf = %q, %v; want %q", got, err, want)
	}
	if got, err := checksOf(`CHECK ((a > 0)) NOT VALID`, 0); err != nil || !slices.Equal(got, []string{"a > 0"}) {
		t.Errorf("constraint definition: %q, %v", got, err)
	}
	if _, err := checksOf(`CREATE TABLE t (a INT CHECK ((a > 0)`, 1); err == nil {
		t.Error("unclosed CHECK accepted")
	}
}

// FuzzCanonicalCheck: the canonical form is a fixed point, so comparing canonical forms is stable.
func FuzzCanonicalCheck(f *testing.F) {
	for _, seed := range []string{`(a = ANY (ARRAY['x'::text]))`, `a NOT BETWEEN 1 AND -2`, `NOT a IS NULL`,
		`(a || 'b') ~ 'c' = TRUE`, `f() <> g(1, "Q""")`, `x::timestamp with time zone[] >= 1.5 % 2`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		once, err := CanonicalCheck(in)
		if err != nil {
			return
		}
		twice, err := CanonicalCheck(once)
		if err != nil || twice != once {
			t.Fatalf("%q -> %q -> %q, %v", in, once, twice, err)
		}
	})
}
