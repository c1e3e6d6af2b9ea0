package openapigen_test

import (
	"strings"
	"testing"

	"forumstats.local/shared/openapigen"
)

func TestGenerate(t *testing.T) {
	for _, tc := range []struct {
		name, src, want, err string
	}{
		{name: "plain JSON, order and types kept",
			src:  "b: 1\na: [x, {c: true, d: null}]\ne: []\nf: {}\ng: '<&>ü'\nh: 1.5\n",
			want: "{\n  \"b\": 1,\n  \"a\": [\n    \"x\",\n    {\n      \"c\": true,\n      \"d\": null\n    }\n  ],\n  \"e\": [],\n  \"f\": {},\n  \"g\": \"<&>ü\",\n  \"h\": 1.5\n}\n"},
		{name: "template with variables, left out of the output",
			src:  "a: {$ref: '#/x-templates/t', N: one}\nx-templates:\n  t: {id: 'get${N}', v: '${N}'}\n",
			want: "{\n  \"a\": {\n    \"id\": \"getone\",\n    \"v\": \"one\"\n  }\n}\n"},
		{name: "a whole-value variable passes a list",
			src:  "a: {$ref: '#/x-templates/t', L: [1, 2]}\nx-templates:\n  t: {l: '${L}'}\n",
			want: "{\n  \"a\": {\n    \"l\": [\n      1,\n      2\n    ]\n  }\n}\n"},
		{name: "components refs stay",
			src:  "a: {$ref: '#/components/schemas/X'}\n",
			want: "{\n  \"a\": {\n    \"$ref\": \"#/components/schemas/X\"\n  }\n}\n"},
		{name: "splice in a mapping, in place, variables inherited",
			src: "a: {get: 1, $splice: {$ref: '#/x-templates/r', M: post}, $splice2: {$ref: '#/x-templates/r', M: put}, z: 2}\nx-templates:\n  r: {'${M}': '${M}${S}'}\n  u: 0\n",
			err: "variable S is not bound"},
		{name: "splice keeps the position",
			src:  "a: {get: 1, $splice: {$ref: '#/x-templates/r', M: post}, z: 2}\nx-templates:\n  r: {'${M}': 3, put: 4}\n",
			want: "{\n  \"a\": {\n    \"get\": 1,\n    \"post\": 3,\n    \"put\": 4,\n    \"z\": 2\n  }\n}\n"},
		{name: "splice in a list",
			src:  "a: [0, {$splice: {$ref: '#/x-templates/l'}}, 3]\nx-templates:\n  l: [1, 2]\n",
			want: "{\n  \"a\": [\n    0,\n    1,\n    2,\n    3\n  ]\n}\n"},
		{name: "a splice that repeats a key", src: "a: {post: 1, $splice: {post: 2}}\n", err: `key "post" twice`},
		{name: "an unknown template", src: "a: {$ref: '#/x-templates/nope'}\n", err: `no template "nope"`},
		{name: "a template that uses itself", src: "a: {$ref: '#/x-templates/t'}\nx-templates:\n  t: {b: {$ref: '#/x-templates/t'}}\n", err: "nest deeper"},
		{name: "not a mapping", src: "- 1\n", err: "not one mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := openapigen.Generate([]byte(tc.src))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
