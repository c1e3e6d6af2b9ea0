package conversation

import (
	"strings"
	"unicode"
)

// The characters a title or a message may hold. Both are shown to other users, in lists, page
// titles, notifications and terminals, so a character that is not text there is refused (400
// invalid_input naming the field), not stored to be misrendered or to rewrite what surrounds it:
//
//   - C0 and C1 controls (ESC starts terminal escape sequences; CR and LF in a title forge extra
//     lines in a list or a log) and DEL, in a title and in a message, but for the tab and the line
//     breaks \n and \r\n in a message, which is text across lines;
//   - in a title, every format character (Unicode category Cf: the bidirectional embeddings,
//     overrides and isolates, the zero-width space, joiner and non-joiner, the byte order mark,
//     soft hyphens, invisible operators, tags) and the line and paragraph separators U+2028 and
//     U+2029: a title is one short line of plain text, where none of them has a use and each can
//     hide or reorder what the reader sees;
//   - in a message, the bidirectional embeddings, overrides and isolates (U+202A..U+202E,
//     U+2066..U+2069), which reorder the text that follows them, past the message's end in some
//     clients, so that what a reader sees is not what was written; and U+2028, U+2029 (a message
//     breaks lines with \n). The other format characters stay: the zero-width joiner builds emoji
//     sequences (family, profession and flag emoji), the zero-width non-joiner is spelling in
//     Persian and Indic scripts, the marks LRM, RLM and ALM set the direction of neutral
//     characters in mixed-direction text without reordering anything, and tag characters build
//     subdivision flags.
//
// A title or message with no visible character (only white space, format characters, Hangul
// fillers and other default-ignorable characters, variation selectors, the blank braille
// pattern) is blank: a required field left empty (required_input_missing), as an empty one is.

// titleRune tells whether r may appear in a title.
func titleRune(r rune) bool {
	return !unicode.IsControl(r) && !unicode.Is(unicode.Cf, r) && !lineSeparator(r)
}

// messageRune tells whether r may appear in a message; a CR only before an LF (see validMessage).
func messageRune(r rune) bool {
	switch {
	case r == '\t', r == '\n', r == '\r':
		return true
	case unicode.IsControl(r), bidiControl(r), lineSeparator(r):
		return false
	}
	return true
}

// bidiControl tells whether r is a bidirectional embedding, override or isolate (or the pop that
// ends one): the characters that reorder the text after them.
func bidiControl(r rune) bool {
	return r >= '\u202A' && r <= '\u202E' || r >= '\u2066' && r <= '\u2069'
}

func lineSeparator(r rune) bool { return r == '\u2028' || r == '\u2029' }

// validTitle tells whether every character of s may appear in a title.
func validTitle(s string) bool {
	return strings.IndexFunc(s, func(r rune) bool { return !titleRune(r) }) < 0
}

// validMessage tells whether every character of s may appear in a message: a CR only as the first
// half of a CRLF line break.
func validMessage(s string) bool {
	if strings.IndexFunc(s, func(r rune) bool { return !messageRune(r) }) >= 0 {
		return false
	}
	for i := strings.IndexByte(s, '\r'); i >= 0; i = strings.IndexByte(s, '\r') {
		if i+1 == len(s) || s[i+1] != '\n' {
			return false
		}
		s = s[i+2:]
	}
	return true
}

// visible tells whether r shows as something on the screen.
func visible(r rune) bool {
	switch {
	case unicode.IsSpace(r), unicode.IsControl(r), unicode.Is(unicode.Cf, r),
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r), unicode.Is(unicode.Variation_Selector, r),
		r == '\u2800': // BRAILLE PATTERN BLANK
		return false
	}
	return true
}

// hasVisible tells whether s holds a visible character.
func hasVisible(s string) bool { return strings.IndexFunc(s, visible) >= 0 }
