// Package openapigen expands a service's OpenAPI source, written once in YAML, into the JSON
// document the service serves.
//
// The source is an OpenAPI document plus one root section, x-templates, that the output leaves
// out. Three forms refer to it; each is expanded where it stands, so the served document holds
// only what OpenAPI itself knows (its real refs into components stay as written):
//
//   - A mapping whose $ref names "#/x-templates/NAME" is replaced by that template. The other
//     keys beside the $ref bind variables for it: `{$ref: '#/x-templates/notAllowed', M: POST}`.
//     A template sees the variables of the place that uses it, overlaid by its own bindings.
//   - "${NAME}" inside a string (a key or a value) is replaced by the variable's text; a string
//     that is exactly "${NAME}" is replaced by the variable's value whatever its kind, so a list
//     or a mapping can be passed in.
//   - A key that starts with "$splice" ($splice, $splice2, ...: YAML keys are unique) inserts, at
//     its place in a mapping, the entries of the mapping (or of each mapping in the list) it
//     expands to; a list item `{$splice: X}` inserts the items of list X. That is how one
//     template lists the refused methods of every path.
//
// The JSON keeps the source's key order and is indented by two spaces, every string as written
// (no HTML escaping), with a final newline: the bytes a hand-written document would have had.
package openapigen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

const (
	templatesKey    = "x-templates"
	templatesPrefix = "#/" + templatesKey + "/"
	spliceKey       = "$splice"
	// maxDepth bounds template nesting, so a template that uses itself is an error, not a hang.
	maxDepth = 64
)

var variable = regexp.MustCompile(`\$\{([A-Za-z][A-Za-z0-9_]*)\}`)

// Generate expands the YAML source into the served JSON document.
func Generate(src []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("openapigen: the source is not one mapping")
	}
	root := doc.Content[0]
	x := &expander{templates: map[string]*yaml.Node{}}
	body := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if k.Value != templatesKey {
			body.Content = append(body.Content, k, v)
			continue
		}
		if v.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("openapigen: line %d: %s is not a mapping", v.Line, templatesKey)
		}
		for j := 0; j < len(v.Content); j += 2 {
			x.templates[v.Content[j].Value] = v.Content[j+1]
		}
	}
	out, err := x.expand(body, nil, 0)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := write(&buf, out, ""); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

type expander struct {
	templates map[string]*yaml.Node
}

// expand returns n with its templates, variables and splices expanded, as a new tree.
func (x *expander) expand(n *yaml.Node, vars map[string]*yaml.Node, depth int) (*yaml.Node, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("openapigen: line %d: templates nest deeper than %d (a template uses itself?)", n.Line, maxDepth)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return x.expand(n.Alias, vars, depth+1)
	case yaml.ScalarNode:
		return x.scalar(n, vars)
	case yaml.SequenceNode:
		out := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Line: n.Line}
		for _, item := range n.Content {
			if item.Kind == yaml.MappingNode && len(item.Content) == 2 && item.Content[0].Value == spliceKey {
				list, err := x.expand(item.Content[1], vars, depth+1)
				if err != nil {
					return nil, err
				}
				if list.Kind != yaml.SequenceNode {
					return nil, fmt.Errorf("openapigen: line %d: a list item's %s is not a list", item.Line, spliceKey)
				}
				out.Content = append(out.Content, list.Content...)
				continue
			}
			e, err := x.expand(item, vars, depth+1)
			if err != nil {
				return nil, err
			}
			out.Content = append(out.Content, e)
		}
		return out, nil
	case yaml.MappingNode:
		return x.mapping(n, vars, depth)
	}
	return nil, fmt.Errorf("openapigen: line %d: unexpected YAML node", n.Line)
}

func (x *expander) scalar(n *yaml.Node, vars map[string]*yaml.Node) (*yaml.Node, error) {
	if n.Tag != "!!str" || !strings.Contains(n.Value, "${") {
		c := *n
		return &c, nil
	}
	if m := variable.FindStringSubmatch(n.Value); m != nil && m[0] == n.Value {
		v, ok := vars[m[1]]
		if !ok {
			return nil, fmt.Errorf("openapigen: line %d: variable %s is not bound", n.Line, m[1])
		}
		c := *v
		return &c, nil
	}
	var err error
	s := variable.ReplaceAllStringFunc(n.Value, func(ref string) string {
		name := ref[2 : len(ref)-1]
		v, ok := vars[name]
		if !ok || v.Kind != yaml.ScalarNode {
			err = fmt.Errorf("openapigen: line %d: variable %s is not bound to text", n.Line, name)
			return ref
		}
		return v.Value
	})
	if err != nil {
		return nil, err
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Line: n.Line}, nil
}

func (x *expander) mapping(n *yaml.Node, vars map[string]*yaml.Node, depth int) (*yaml.Node, error) {
	for i := 0; i < len(n.Content); i += 2 {
		if k, v := n.Content[i], n.Content[i+1]; k.Value == "$ref" && strings.HasPrefix(v.Value, templatesPrefix) {
			return x.use(n, strings.TrimPrefix(v.Value, templatesPrefix), vars, depth)
		}
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: n.Line}
	seen := map[string]bool{}
	add := func(k, v *yaml.Node) error {
		if seen[k.Value] {
			return fmt.Errorf("openapigen: line %d: key %q twice", k.Line, k.Value)
		}
		seen[k.Value] = true
		out.Content = append(out.Content, k, v)
		return nil
	}
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if strings.HasPrefix(k.Value, spliceKey) {
			e, err := x.expand(v, vars, depth+1)
			if err != nil {
				return nil, err
			}
			parts := []*yaml.Node{e}
			if e.Kind == yaml.SequenceNode {
				parts = e.Content
			}
			for _, p := range parts {
				if p.Kind != yaml.MappingNode {
					return nil, fmt.Errorf("openapigen: line %d: %s is not a mapping", k.Line, spliceKey)
				}
				for j := 0; j < len(p.Content); j += 2 {
					if err := add(p.Content[j], p.Content[j+1]); err != nil {
						return nil, err
					}
				}
			}
			continue
		}
		ek, err := x.scalar(k, vars)
		if err != nil {
			return nil, err
		}
		ev, err := x.expand(v, vars, depth+1)
		if err != nil {
			return nil, err
		}
		if err := add(ek, ev); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// use expands the template that the mapping n refers to, with n's other keys bound as variables.
func (x *expander) use(n *yaml.Node, name string, vars map[string]*yaml.Node, depth int) (*yaml.Node, error) {
	t, ok := x.templates[name]
	if !ok {
		return nil, fmt.Errorf("openapigen: line %d: no template %q", n.Line, name)
	}
	inner := make(map[string]*yaml.Node, len(vars)+len(n.Content)/2)
	for k, v := range vars {
		inner[k] = v
	}
	for i := 0; i < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "$ref" {
			continue
		}
		e, err := x.expand(v, vars, depth+1)
		if err != nil {
			return nil, err
		}
		inner[k.Value] = e
	}
	return x.expand(t, inner, depth+1)
}

// write writes n as JSON indented by two spaces per level, after the prefix indent.
func write(buf *bytes.Buffer, n *yaml.Node, indent string) error {
	switch n.Kind {
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!str":
			return writeString(buf, n.Value)
		case "!!int", "!!float", "!!bool":
			if !json.Valid([]byte(n.Value)) {
				return fmt.Errorf("openapigen: line %d: %q is not a JSON %s", n.Line, n.Value, n.Tag)
			}
			buf.WriteString(n.Value)
		case "!!null":
			buf.WriteString("null")
		default:
			return fmt.Errorf("openapigen: line %d: unsupported tag %s", n.Line, n.Tag)
		}
		return nil
	case yaml.SequenceNode:
		if len(n.Content) == 0 {
			buf.WriteString("[]")
			return nil
		}
		buf.WriteString("[\n")
		for i, item := range n.Content {
			buf.WriteString(indent + "  ")
			if err := write(buf, item, indent+"  "); err != nil {
				return err
			}
			if i < len(n.Content)-1 {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		buf.WriteString(indent + "]")
		return nil
	case yaml.MappingNode:
		if len(n.Content) == 0 {
			buf.WriteString("{}")
			return nil
		}
		buf.WriteString("{\n")
		for i := 0; i < len(n.Content); i += 2 {
			buf.WriteString(indent + "  ")
			if err := writeString(buf, n.Content[i].Value); err != nil {
				return err
			}
			buf.WriteString(": ")
			if err := write(buf, n.Content[i+1], indent+"  "); err != nil {
				return err
			}
			if i < len(n.Content)-2 {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		buf.WriteString(indent + "}")
		return nil
	}
	return fmt.Errorf("openapigen: line %d: unexpected YAML node", n.Line)
}

func writeString(buf *bytes.Buffer, s string) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	buf.Write(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return nil
}
