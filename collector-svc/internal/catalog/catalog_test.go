package catalog

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var want = []Entry{
	{Number: 1, Name: "Alpha", GuildID: "81384788765712384"},
	{Number: 2, Name: "Beta", GuildID: "0123"},
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, ext, data string
	}{
		{"json", ".json", `[{"number":1,"name":"Alpha","guildId":"81384788765712384"},{"number":2,"name":"Beta","guildId":"0123"}]`},
		{"yaml quoted", ".yaml", "- number: 1\n  name: Alpha\n  guildId: \"81384788765712384\"\n- {number: 2, name: Beta, guildId: '0123'}\n"},
		// An unquoted id is a YAML integer: its digits are kept as written.
		{"yaml unquoted ids", ".yml", "- number: 1\n  name: Alpha\n  guildId: 81384788765712384\n- number: 2\n  name: Beta\n  guildId: 0123\n"},
		{"sniffed json", "", `  [{"number":1,"name":"Alpha","guildId":"81384788765712384"},{"number":2,"name":"Beta","guildId":"0123"}]`},
		{"sniffed yaml", ".txt", "- number: 1\n  name: Alpha\n  guildId: '81384788765712384'\n- number: 2\n  name: Beta\n  guildId: '0123'\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.data), tt.ext)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("got %+v", got)
			}
		})
	}
}

func TestParseEmptyList(t *testing.T) {
	got, err := Parse([]byte("[]"), ".json")
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("got %v, %v; want an empty catalog", got, err)
	}
}

func TestParseRefusals(t *testing.T) {
	tests := []struct {
		name, ext, data, want string
	}{
		{"unknown json key", ".json", `[{"number":1,"name":"A","guildId":"1","extra":1}]`, `unknown field "extra"`},
		{"unknown yaml key", ".yaml", "- {number: 1, name: A, guildId: '1', extra: 1}\n", "field extra not found"},
		{"not a list", ".json", `{"number":1}`, "invalid JSON"},
		{"null", ".json", `null`, "want a list"},
		{"empty yaml", ".yaml", ``, "empty file"},
		{"trailing json", ".json", `[] []`, "data after the list"},
		{"zero number", ".json", `[{"number":0,"name":"A","guildId":"1"}]`, "[0].number: must be a positive integer"},
		{"missing name", ".json", `[{"number":1,"guildId":"1"}]`, "[0].name: must not be empty"},
		{"letters in id", ".json", `[{"number":1,"name":"A","guildId":"12a"}]`, `[0].guildId: must be 1 to 20 digits, got "12a"`},
		{"id too long", ".json", `[{"number":1,"name":"A","guildId":"123456789012345678901"}]`, "[0].guildId: must be 1 to 20 digits"},
		{"duplicate number", ".json", `[{"number":1,"name":"A","guildId":"1"},{"number":1,"name":"B","guildId":"2"}]`, "[1].number: 1 is also the number of [0]"},
		{"duplicate guild", ".yaml", "- {number: 1, name: A, guildId: '7'}\n- {number: 2, name: B, guildId: '7'}\n", "[1].guildId: 7 is also the guild of [0]"},
		{"float number", ".json", `[{"number":1.5,"name":"A","guildId":"1"}]`, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data), tt.ext)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "servers.yaml")
	if err := os.WriteFile(path, []byte("- {number: 3, name: Gamma, guildId: '42'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil || len(got) != 1 || got[0].GuildID != "42" {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Fatal("a missing file loaded")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`[{"number":1,"name":"A","guildId":"1"}]`), ".json")
	f.Add([]byte("- {number: 2, name: B, guildId: 0123}\n"), ".yaml")
	f.Add([]byte("[]"), "")
	f.Fuzz(func(t *testing.T, data []byte, ext string) {
		entries, err := Parse(data, ext)
		if err != nil {
			return
		}
		// Whatever parses is valid.
		if err := Validate(entries, "x"); err != nil {
			t.Fatalf("Parse accepted an invalid catalog: %v", err)
		}
	})
}
