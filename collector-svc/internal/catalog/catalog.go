// Package catalog reads and checks the list of configured servers: the CATALOG_FILE (JSON or
// YAML) and the catalog section of the import file.
package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Entry is one configured server.
type Entry struct {
	Number  int    `json:"number" yaml:"number"`
	Name    string `json:"name" yaml:"name"`
	GuildID string `json:"guildId" yaml:"guildId"`
}

// Load reads and validates a catalog file: a JSON or YAML list of {number, name, guildId}.
// The format follows the extension (.json, .yaml, .yml); any other file is read as JSON when
// it starts with '[', else as YAML.
func Load(path string) ([]Entry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("catalog file: %w", err)
	}
	entries, err := Parse(data, filepath.Ext(path))
	if err != nil {
		return nil, fmt.Errorf("catalog file %s: %w", path, err)
	}
	return entries, nil
}

// Parse decodes data (ext ".json", ".yaml", ".yml" or anything else to sniff) strictly, refusing
// unknown keys, and validates the entries.
func Parse(data []byte, ext string) ([]Entry, error) {
	var (
		entries []Entry
		err     error
	)
	switch strings.ToLower(ext) {
	case ".json":
		entries, err = parseJSON(data)
	case ".yaml", ".yml":
		entries, err = parseYAML(data)
	default:
		if trimmed := bytes.TrimSpace(data); len(trimmed) > 0 && trimmed[0] == '[' {
			entries, err = parseJSON(data)
		} else {
			entries, err = parseYAML(data)
		}
	}
	if err != nil {
		return nil, err
	}
	if entries == nil {
		return nil, errors.New("want a list of {number, name, guildId}")
	}
	if err := Validate(entries, ""); err != nil {
		return nil, err
	}
	return entries, nil
}

func parseJSON(data []byte) ([]Entry, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var entries []Entry
	if err := dec.Decode(&entries); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: data after the list")
	}
	return entries, nil
}

func parseYAML(data []byte) ([]Entry, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var entries []Entry
	if err := dec.Decode(&entries); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file")
		}
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	return entries, nil
}

// Validate checks every entry and names the first bad one, as prefix[i].field: numbers are
// positive and unique, names are not blank, guild ids are 1 to 20 digits and unique.
func Validate(entries []Entry, prefix string) error {
	numbers := make(map[int]int, len(entries))
	guilds := make(map[string]int, len(entries))
	for i, e := range entries {
		at := fmt.Sprintf("%s[%d]", prefix, i)
		switch {
		case e.Number <= 0:
			return fmt.Errorf("%s.number: must be a positive integer", at)
		case strings.TrimSpace(e.Name) == "":
			return fmt.Errorf("%s.name: must not be empty", at)
		case !IsGuildID(e.GuildID):
			return fmt.Errorf("%s.guildId: must be 1 to 20 digits, got %q", at, e.GuildID)
		}
		if j, dup := numbers[e.Number]; dup {
			return fmt.Errorf("%s.number: %d is also the number of %s[%d]", at, e.Number, prefix, j)
		}
		if j, dup := guilds[e.GuildID]; dup {
			return fmt.Errorf("%s.guildId: %s is also the guild of %s[%d]", at, e.GuildID, prefix, j)
		}
		numbers[e.Number], guilds[e.GuildID] = i, i
	}
	return nil
}

// IsGuildID tells whether s has the form of a platform identifier: 1 to 20 decimal digits.
func IsGuildID(s string) bool {
	if len(s) == 0 || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
