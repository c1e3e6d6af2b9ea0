// Package bbcode renders XenForo's BB code, the markup of conversation messages, as HTML: the
// `message_parsed` of a message, its `message` being the BB code as written.
//
// The renderer knows a fixed set of tags and writes for each a fixed shape of HTML (after
// XenForo's own); everything else a message holds is text, escaped. Its output then passes a
// bluemonday policy that allows exactly those shapes (policy.go): a second wall, which never has
// anything to remove unless the renderer has a bug, and whose output is the answer.
package bbcode

import (
	"strings"
)

// The tags, by lower-case name.
const (
	tagB     = "b"
	tagI     = "i"
	tagU     = "u"
	tagS     = "s"
	tagURL   = "url"
	tagEmail = "email"
	tagImg   = "img"
	tagQuote = "quote"
	tagCode  = "code"
	tagICode = "icode"
	tagList  = "list"
	tagItem  = "*"
	tagColor = "color"
	tagSize  = "size"
)

// plainTags hold text, not BB code: their content is taken as written up to their closing tag,
// so `[code][b][/code]` shows "[b]". [url] and [email] without an option are plain too: their
// content is the address.
var plainTags = map[string]bool{tagCode: true, tagICode: true, tagImg: true}

// knownTags are the tag names the parser recognises; any other `[...]` is text.
var knownTags = map[string]bool{tagB: true, tagI: true, tagU: true, tagS: true, tagURL: true, tagEmail: true,
	tagImg: true, tagQuote: true, tagCode: true, tagICode: true, tagList: true, tagItem: true, tagColor: true, tagSize: true}

// maxDepth bounds the nesting of tags: deeper tags stay text, so that no message makes the
// renderer recurse without bound.
const maxDepth = 32

// maxOption bounds a tag's option (`[url=...]`), in bytes; a longer one is no tag.
const maxOption = 2048

// maxTagLength bounds a tag as written: "[", the longest name, "=", the option, "]".
const maxTagLength = maxOption + 16

// node is a piece of a parsed message: text, or a tag with its children.
type node struct {
	tag      string // "" for text
	text     string // the text; for a tag, its opening as written (shown when the tag stays text)
	option   string // the tag's option, unquoted
	children []*node
}

// tagToken is a tag as written: `[name]`, `[name=option]` or `[/name]`.
type tagToken struct {
	name    string // lower case
	option  string
	hasOpt  bool
	closing bool
	raw     string
}

// readTag reads the tag at the start of s (which starts with "["); ok is false when s does not
// start with a known tag.
func readTag(s string) (t tagToken, ok bool) {
	// A tag is no longer than its longest option allows: look no further, so that a message of
	// many "[" and no "]" is still read in one pass.
	end := strings.IndexByte(s[:min(len(s), maxTagLength)], ']')
	if end < 0 {
		return t, false
	}
	body := s[1:end]
	t.raw = s[:end+1]
	if rest, isClose := strings.CutPrefix(body, "/"); isClose {
		t.closing = true
		body = rest
	}
	name, option, hasOpt := strings.Cut(body, "=")
	t.name = strings.ToLower(name)
	if !knownTags[t.name] || (t.closing && hasOpt) || strings.ContainsAny(option, "\n[") {
		return t, false
	}
	if hasOpt {
		t.hasOpt = true
		t.option = unquote(strings.TrimSpace(option))
		if t.name == tagItem || len(t.option) > maxOption {
			return t, false
		}
	}
	return t, true
}

// unquote strips one pair of matching quotes around an option (`[quote="Name"]`).
func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// parser builds the tree of a message with a stack of open tags.
type parser struct {
	src   string
	root  node
	stack []*node
	// closeAt remembers, for each plain tag, where its next closing tag was found from where, so
	// that a message of many unclosed [code] tags is still read in one pass.
	closeFrom map[string]int
	closeAt   map[string]int
}

func parse(src string) *node {
	p := &parser{src: src, closeFrom: map[string]int{}, closeAt: map[string]int{}}
	p.stack = []*node{&p.root}
	var text strings.Builder
	flush := func() {
		if text.Len() > 0 {
			p.top().children = append(p.top().children, &node{text: text.String()})
			text.Reset()
		}
	}
	for i := 0; i < len(src); {
		j := strings.IndexByte(src[i:], '[')
		if j < 0 {
			text.WriteString(src[i:])
			break
		}
		text.WriteString(src[i : i+j])
		i += j
		t, ok := readTag(src[i:])
		if !ok {
			text.WriteByte('[')
			i++
			continue
		}
		if consumed, handled := p.tag(t, i, flush); handled {
			i += consumed
			continue
		}
		text.WriteString(t.raw)
		i += len(t.raw)
	}
	flush()
	// Tags left open at the end stay text.
	for len(p.stack) > 1 {
		p.unwind()
	}
	return &p.root
}

func (p *parser) top() *node { return p.stack[len(p.stack)-1] }

// tag applies the tag t found at src[at:]; handled is false when it stays text. consumed is how
// much of the source it took (a plain tag takes its content and closing tag too).
func (p *parser) tag(t tagToken, at int, flush func()) (consumed int, handled bool) {
	if t.closing {
		return p.close(t, flush)
	}
	if t.name == tagItem {
		return p.item(t, flush)
	}
	if len(p.stack) > maxDepth {
		return 0, false
	}
	if plainTags[t.name] || ((t.name == tagURL || t.name == tagEmail) && !t.hasOpt) {
		content, total, ok := p.plain(t, at)
		if !ok || !validTag(t.name, t.option, t.hasOpt, content) {
			return 0, false
		}
		flush()
		p.top().children = append(p.top().children, &node{tag: t.name, text: t.raw, option: t.option,
			children: []*node{{text: content}}})
		return total, true
	}
	if !validTag(t.name, t.option, t.hasOpt, "") {
		return 0, false
	}
	flush()
	n := &node{tag: t.name, text: t.raw, option: t.option}
	p.top().children = append(p.top().children, n)
	p.stack = append(p.stack, n)
	return len(t.raw), true
}

// plain finds the content of the plain tag t opened at src[at:] up to its closing tag.
func (p *parser) plain(t tagToken, at int) (content string, total int, ok bool) {
	start := at + len(t.raw)
	closer := "[/" + t.name + "]"
	pos, known := p.closeAt[t.name]
	if !known || p.closeFrom[t.name] > start || (pos >= 0 && pos < start) {
		pos = indexFold(p.src[start:], closer)
		if pos >= 0 {
			pos += start
		}
		p.closeFrom[t.name], p.closeAt[t.name] = start, pos
	}
	if pos < 0 {
		return "", 0, false
	}
	return p.src[start:pos], pos + len(closer) - at, true
}

// indexFold is strings.Index for an ASCII needle, ignoring ASCII case.
func indexFold(s, needle string) int {
	n := len(needle)
	for i := 0; i+n <= len(s); i++ {
		j := strings.IndexByte(s[i:], needle[0])
		if j < 0 {
			return -1
		}
		i += j
		if i+n <= len(s) && strings.EqualFold(s[i:i+n], needle) {
			return i
		}
	}
	return -1
}

// item opens a list item: inside a list, or after an item of one (which it closes).
func (p *parser) item(t tagToken, flush func()) (int, bool) {
	top := p.top()
	switch {
	case top.tag == tagList:
	case top.tag == tagItem:
		flush()
		p.stack = p.stack[:len(p.stack)-1]
	default:
		return 0, false
	}
	flush()
	n := &node{tag: tagItem, text: t.raw}
	p.top().children = append(p.top().children, n)
	p.stack = append(p.stack, n)
	return len(t.raw), true
}

// close closes the innermost open tag of t's name. Tags opened inside it and still open stay text
// (their children kept), but for a list item, which a list's end closes. A closing tag that closes
// nothing stays text.
func (p *parser) close(t tagToken, flush func()) (int, bool) {
	j := len(p.stack) - 1
	for ; j > 0; j-- {
		if p.stack[j].tag == t.name {
			break
		}
	}
	if j == 0 {
		return 0, false
	}
	flush()
	for len(p.stack)-1 > j {
		if p.top().tag == tagItem && p.stack[len(p.stack)-2].tag == tagList {
			p.stack = p.stack[:len(p.stack)-1]
			continue
		}
		p.unwind()
	}
	p.stack = p.stack[:len(p.stack)-1]
	return len(t.raw), true
}

// unwind turns the innermost open tag into text: its opening as written, then its children, in
// its parent's place.
func (p *parser) unwind() {
	n := p.top()
	p.stack = p.stack[:len(p.stack)-1]
	parent := p.top()
	parent.children = parent.children[:len(parent.children)-1] // n is its last child
	parent.children = append(parent.children, &node{text: n.text})
	parent.children = append(parent.children, n.children...)
}
