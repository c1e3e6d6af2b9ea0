package bbcode

import (
	"fmt"
	"html"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Render returns the HTML of a message's BB code. Every tag it knows becomes its one shape of
// HTML; unknown tags, tags left open, closing tags that close nothing and tags with a value they
// may not take (a `javascript:` link, a colour that is none) stay text; all text is escaped. Line
// breaks become `<br/>` and a newline. The output has passed the policy (see Policy).
func Render(src string) string {
	return policy.Sanitize(render(src))
}

// render is the renderer alone, before the policy.
func render(src string) string {
	src = normalize(src)
	var b strings.Builder
	b.Grow(len(src) + len(src)/4)
	r := &renderer{b: &b}
	r.children(parse(src).children, context{})
	return b.String()
}

// normalize makes every line break "\n" (a lone "\r" is one too, as HTML reads it), invalid
// UTF-8 and NUL U+FFFD: the text the HTML will hold.
func normalize(s string) string {
	if strings.ContainsRune(s, '\r') {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.ReplaceAll(s, "\r", "\n")
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.ContainsRune(s, 0) {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	return s
}

// context is where a node is rendered.
type context struct {
	inLink bool // inside a link: no link inside it, no URL made a link
	inList bool // directly inside a list: items are items
}

type renderer struct{ b *strings.Builder }

// The HTML shapes, after XenForo's.
const (
	linkAttrs  = ` class="link link--external" rel="nofollow ugc noopener"`
	quoteOpen  = `<blockquote class="bbCodeBlock bbCodeBlock--quote">`
	blockTitle = `<div class="bbCodeBlock-title">`
	blockBody  = `<div class="bbCodeBlock-content">`
	codeOpen   = `<div class="bbCodeBlock bbCodeBlock--code">` + blockTitle + `Code:</div>` + blockBody + `<pre class="bbCodeCode"><code>`
	codeClose  = `</code></pre></div></div>`
)

// blockTags are rendered as blocks: a line break right after one, or right inside one at its
// start or end, is the block's own edge, not a <br/>.
var blockTags = map[string]bool{tagQuote: true, tagCode: true, tagList: true}

func (r *renderer) children(ns []*node, ctx context) {
	for i, n := range ns {
		if n.tag == "" && i > 0 && blockTags[ns[i-1].tag] {
			r.node(&node{text: strings.TrimPrefix(n.text, "\n")}, ctx)
			continue
		}
		r.node(n, ctx)
	}
}

func (r *renderer) write(s string) { r.b.WriteString(s) }

func (r *renderer) node(n *node, ctx context) {
	if n.tag == "" {
		r.text(n.text, ctx)
		return
	}
	inner := ctx
	inner.inList = false
	switch n.tag {
	case tagB, tagI, tagU, tagS:
		r.write("<" + n.tag + ">")
		r.children(n.children, inner)
		r.write("</" + n.tag + ">")
	case tagColor:
		c, _ := color(n.option)
		r.write(`<span style="color: ` + c + `">`)
		r.children(n.children, inner)
		r.write("</span>")
	case tagSize:
		px, _ := size(n.option)
		r.write(`<span style="font-size: ` + strconv.Itoa(px) + `px">`)
		r.children(n.children, inner)
		r.write("</span>")
	case tagURL, tagEmail:
		r.link(n, ctx)
	case tagImg:
		u, _ := imageURL(n.children[0].text)
		r.write(`<img src="` + html.EscapeString(u) + `" class="bbImage" loading="lazy"/>`)
	case tagQuote:
		r.write(quoteOpen)
		if name := quoteName(n.option); name != "" {
			r.write(blockTitle + html.EscapeString(name) + " said:</div>")
		}
		r.write(blockBody)
		r.children(trimEdges(n.children), inner)
		r.write("</div></blockquote>")
	case tagCode:
		r.write(codeOpen)
		r.write(html.EscapeString(strings.TrimPrefix(strings.TrimSuffix(n.children[0].text, "\n"), "\n")))
		r.write(codeClose)
	case tagICode:
		r.write(`<code class="bbCodeInline">` + html.EscapeString(n.children[0].text) + "</code>")
	case tagList:
		r.list(n, inner)
	case tagItem:
		if !ctx.inList { // an item whose list did not close around it
			r.text(n.text, ctx)
			r.children(n.children, ctx)
			return
		}
		r.write("<li>")
		r.children(trimEdges(n.children), inner)
		r.write("</li>\n")
	}
}

// link renders [url] and [email]: the address is the option, or the content when there is none.
func (r *renderer) link(n *node, ctx context) {
	var href string
	if n.tag == tagURL {
		href, _ = linkURL(firstNonEmpty(n.option, n.children))
	} else {
		href, _ = emailURL(firstNonEmpty(n.option, n.children))
	}
	if ctx.inLink { // a link inside a link is its text
		r.children(n.children, ctx)
		return
	}
	attrs := linkAttrs // a web link leaves the forum
	if strings.HasPrefix(href, "mailto:") {
		attrs = ""
	}
	r.write(`<a href="` + html.EscapeString(href) + `"` + attrs + `>`)
	inner := ctx
	inner.inLink, inner.inList = true, false
	if blank(n.children) { // [url=...][/url]: the address is the text
		r.write(html.EscapeString(strings.TrimPrefix(href, "mailto:")))
	} else {
		r.children(n.children, inner)
	}
	r.write("</a>")
}

// firstNonEmpty is the option when the tag has one, else its (plain) content.
func firstNonEmpty(option string, children []*node) string {
	if option != "" {
		return option
	}
	return children[0].text
}

// list renders a list: its items, and any text before the first item (but white space) as an
// item of its own.
func (r *renderer) list(n *node, ctx context) {
	if n.option == "" {
		r.write("<ul>\n")
	} else {
		r.write(`<ol type="` + n.option + `">` + "\n")
	}
	inList := ctx
	inList.inList = true
	var loose []*node
	flushLoose := func() {
		if len(loose) == 0 {
			return
		}
		if !blank(loose) {
			r.write("<li>")
			r.children(trimEdges(loose), ctx)
			r.write("</li>\n")
		}
		loose = nil
	}
	for _, c := range n.children {
		if c.tag == tagItem {
			flushLoose()
			r.node(c, inList)
			continue
		}
		loose = append(loose, c)
	}
	flushLoose()
	if n.option == "" {
		r.write("</ul>")
	} else {
		r.write("</ol>")
	}
}

// blank tells whether nodes are only white space text.
func blank(ns []*node) bool {
	for _, n := range ns {
		if n.tag != "" || strings.TrimSpace(n.text) != "" {
			return false
		}
	}
	return true
}

// trimEdges drops one line break at the start of the first node and one at the end of the last,
// when they are text: the edges of a block.
func trimEdges(ns []*node) []*node {
	if len(ns) == 0 {
		return ns
	}
	out := append([]*node(nil), ns...)
	if first := out[0]; first.tag == "" {
		out[0] = &node{text: strings.TrimPrefix(first.text, "\n")}
	}
	if last := out[len(out)-1]; last.tag == "" {
		out[len(out)-1] = &node{text: strings.TrimSuffix(last.text, "\n")}
	}
	return out
}

// bareURL finds the web addresses in text (not inside a link or code): they become links.
var bareURL = regexp.MustCompile(`(?i)\bhttps?://[^\s<>\[\]"']+`)

// text writes text escaped, its line breaks as <br/>, its web addresses as links (outside links).
func (r *renderer) text(s string, ctx context) {
	if ctx.inLink || !strings.Contains(s, "://") {
		r.lines(s)
		return
	}
	for s != "" {
		loc := bareURL.FindStringIndex(s)
		if loc == nil {
			r.lines(s)
			return
		}
		// Trailing punctuation ends a sentence, not the address.
		end := loc[0] + len(strings.TrimRight(s[loc[0]:loc[1]], ".,;:!?)"))
		href, ok := linkURL(s[loc[0]:end])
		if !ok {
			r.lines(s[:end])
			s = s[end:]
			continue
		}
		r.lines(s[:loc[0]])
		r.write(`<a href="` + html.EscapeString(href) + `"` + linkAttrs + `>` + html.EscapeString(s[loc[0]:end]) + "</a>")
		s = s[end:]
	}
}

// lines writes text escaped with its line breaks as <br/>.
func (r *renderer) lines(s string) {
	for {
		line, rest, found := strings.Cut(s, "\n")
		r.write(html.EscapeString(line))
		if !found {
			return
		}
		r.write("<br/>\n")
		s = rest
	}
}

// validTag tells whether a tag may take its option (and, for a plain tag, its content); one that
// may not stays text.
func validTag(name, option string, hasOpt bool, content string) bool {
	switch name {
	case tagB, tagI, tagU, tagS, tagICode, tagImg:
		if hasOpt {
			return false
		}
		if name == tagImg {
			_, ok := imageURL(content)
			return ok
		}
		return true
	case tagURL:
		_, ok := linkURL(firstNonEmpty(option, []*node{{text: content}}))
		return ok
	case tagEmail:
		_, ok := emailURL(firstNonEmpty(option, []*node{{text: content}}))
		return ok
	case tagQuote, tagCode:
		return true
	case tagList:
		return !hasOpt || listTypes[option]
	case tagColor:
		_, ok := color(option)
		return hasOpt && ok
	case tagSize:
		_, ok := size(option)
		return hasOpt && ok
	}
	return false
}

// listTypes are the numbering of [list=...]: decimal, letters, roman numerals.
var listTypes = map[string]bool{"1": true, "a": true, "A": true, "i": true, "I": true}

// linkURL checks a link's address and returns it as written in the HTML. Only http, https and
// mailto links are made: an address without a scheme is a web address (`example.com/x` is
// http://example.com/x, as XenForo reads it); a relative one (`/x`, `../x`, `//host/x`) is no
// link, since a message is shown on other pages than the forum's, where it would point elsewhere.
func linkURL(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(strings.ToLower(s), "mailto:") {
		return emailURL(s[len("mailto:"):])
	}
	if !strings.Contains(s, "://") && !strings.HasPrefix(s, "/") && !strings.HasPrefix(s, ".") {
		if i := strings.IndexAny(s, ":/?#"); i < 0 || s[i] != ':' {
			s = "http://" + s
		}
	}
	return webURL(s)
}

// imageURL checks an image's address: http or https only.
func imageURL(s string) (string, bool) { return webURL(strings.TrimSpace(s)) }

// hostName is a host as a link may name it: DNS labels, or an IPv4 address, with a port.
var hostName = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.?(?::[0-9]{1,5})?$`)

// webURL checks an absolute http or https address: a host named plainly, no user name or
// password (a link's text could then hide where it goes), no white space or control character.
// It returns the address as net/url writes it, which reads back the same.
func webURL(s string) (string, bool) {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || r == utf8.RuneError }) {
		return "", false
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || u.Opaque != "" ||
		!hostName.MatchString(u.Host) {
		return "", false
	}
	return canonical(u)
}

// emailAddress is an address as [email] takes it.
var emailAddress = regexp.MustCompile(`^[A-Za-z0-9.!#$%&*+/=?^_{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+$`)

// emailURL checks an e-mail address and returns its mailto: link.
func emailURL(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if !emailAddress.MatchString(s) {
		return "", false
	}
	u, err := url.Parse("mailto:" + s)
	if err != nil {
		return "", false
	}
	return canonical(u)
}

// canonical is u as net/url writes it, when that reads back as itself: the HTML's address is
// then the one the sanitizer (which writes what it reads with net/url) keeps unchanged.
func canonical(u *url.URL) (string, bool) {
	s := u.String()
	again, err := url.Parse(s)
	if err != nil || again.String() != s {
		return "", false
	}
	return s, true
}

// namedColors are the colour names [color=...] takes: CSS's basic colours and a few common ones.
var namedColors = map[string]bool{
	"black": true, "silver": true, "gray": true, "grey": true, "white": true, "maroon": true, "red": true,
	"purple": true, "fuchsia": true, "green": true, "lime": true, "olive": true, "yellow": true, "navy": true,
	"blue": true, "teal": true, "aqua": true, "orange": true, "pink": true, "brown": true, "gold": true,
	"violet": true, "indigo": true, "cyan": true, "magenta": true, "crimson": true, "darkred": true,
	"darkgreen": true, "darkblue": true, "darkorange": true, "lightblue": true, "lightgreen": true,
	"skyblue": true, "tomato": true, "coral": true, "salmon": true, "khaki": true, "beige": true,
}

var (
	hexColor = regexp.MustCompile(`^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$`)
	rgbColor = regexp.MustCompile(`^(?i)rgb\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\)$`)
)

// color reads [color=...]: a name of namedColors, #rgb or #rrggbb, or rgb(r, g, b) with each
// 0..255. It returns the CSS value as written in the HTML (lower case, rgb() spaced one way).
func color(s string) (string, bool) {
	s = strings.TrimSpace(s)
	lower := strings.ToLower(s)
	switch {
	case namedColors[lower], hexColor.MatchString(s):
		return lower, true
	}
	m := rgbColor.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	var c [3]int
	for i := range c {
		n, err := strconv.Atoi(m[i+1])
		if err != nil || n > 255 {
			return "", false
		}
		c[i] = n
	}
	return fmt.Sprintf("rgb(%d, %d, %d)", c[0], c[1], c[2]), true
}

// fontSizes are XenForo's sizes 1..7, in pixels.
var fontSizes = [...]int{1: 9, 2: 10, 3: 12, 4: 15, 5: 18, 6: 22, 7: 26}

// Bounds of a size given in pixels ([size=20px]): outside, it is brought within.
const (
	minFontPx = 8
	maxFontPx = 36
)

// size reads [size=...]: 1..7 (XenForo's scale), or Npx with N a whole number, brought within
// minFontPx..maxFontPx. It returns the size in pixels.
func size(s string) (int, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if len(s) == 1 && s[0] >= '1' && s[0] <= '7' {
		return fontSizes[s[0]-'0'], true
	}
	digits, ok := strings.CutSuffix(s, "px")
	if !ok || digits == "" || len(digits) > 4 || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, _ := strconv.Atoi(digits)
	return min(max(n, minFontPx), maxFontPx), true
}

// quoteName is the author a [quote=...] names: XenForo writes `Name, post: 12, member: 3`.
func quoteName(option string) string {
	name, _, _ := strings.Cut(option, ",")
	return strings.TrimSpace(name)
}
