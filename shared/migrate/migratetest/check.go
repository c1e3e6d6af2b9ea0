package migratetest

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// A CHECK constraint reads differently in the two databases: PostgreSQL shows its own deparsed
// form (pg_get_constraintdef: every operation parenthesised, literals cast, IN as = ANY (ARRAY[..]),
// BETWEEN expanded), SQLite shows the text of the migration. CanonicalCheck parses either into one
// form so that the two can be compared as strings.
//
// The grammar is the part of SQL that check constraints use, with PostgreSQL's precedence. SQLite
// binds || tighter and IS looser; expressions that mix those without parentheses may canonicalise
// differently, which shows as a difference, never as a false match.

// CanonicalCheck returns the canonical form of a check expression: casts dropped, keywords upper
// case, identifiers lower case, != as <>, x = ANY (ARRAY[a, b]) as x IN (a, b), x NOT IN/GLOB/LIKE y
// as NOT (x IN/GLOB/LIKE y), BETWEEN as two comparisons, and exactly the parentheses the
// structure needs.
func CanonicalCheck(expr string) (string, error) {
	toks, err := tokenize(expr)
	if err != nil {
		return "", err
	}
	return canonicalTokens(toks)
}

func canonicalTokens(toks []token) (string, error) {
	p := &parser{toks: toks}
	n, err := p.expr()
	if err != nil {
		return "", err
	}
	if !p.done() {
		return "", fmt.Errorf("unexpected %q", p.peek().text)
	}
	return canonical(n), nil
}

// checksOf returns the canonical CHECK expressions written at parenthesis depth depth of sql: 1 for
// SQLite's CREATE TABLE text (column and table constraints sit inside its parentheses), 0 for a
// constraint definition of pg_get_constraintdef.
func checksOf(sql string, depth int) ([]string, error) {
	toks, err := tokenize(sql)
	if err != nil {
		return nil, err
	}
	var out []string
	level := 0
	for i := 0; i < len(toks); i++ {
		switch t := toks[i]; {
		case t.is("("):
			level++
		case t.is(")"):
			level--
		case level == depth && t.kind == tokIdent && t.text == "check" && i+1 < len(toks) && toks[i+1].is("("):
			end := closing(toks, i+1)
			if end < 0 {
				return nil, errors.New("CHECK without its closing parenthesis")
			}
			c, err := canonicalTokens(toks[i+2 : end])
			if err != nil {
				return nil, fmt.Errorf("CHECK %s: %w", joinTokens(toks[i+2:end]), err)
			}
			out = append(out, c)
			i = end
		}
	}
	return out, nil
}

// closing returns the index of the parenthesis that closes toks[open], or -1.
func closing(toks []token, open int) int {
	level := 0
	for i := open; i < len(toks); i++ {
		switch {
		case toks[i].is("("):
			level++
		case toks[i].is(")"):
			level--
			if level == 0 {
				return i
			}
		}
	}
	return -1
}

func joinTokens(toks []token) string {
	parts := make([]string, len(toks))
	for i, t := range toks {
		parts[i] = t.text
	}
	return strings.Join(parts, " ")
}

type tokKind int

const (
	tokIdent   tokKind = iota // lower-cased unless quoted
	tokKeyword                // upper-cased
	tokNumber
	tokString // text without quotes, '' unescaped
	tokOp
)

type token struct {
	kind tokKind
	text string
}

func (t token) is(op string) bool { return t.kind == tokOp && t.text == op }

func (t token) isKeyword(kw string) bool { return t.kind == tokKeyword && t.text == kw }

var keywords = map[string]bool{
	"AND": true, "OR": true, "NOT": true, "IS": true, "NULL": true, "IN": true, "BETWEEN": true,
	"GLOB": true, "LIKE": true, "TRUE": true, "FALSE": true, "ARRAY": true, "ANY": true,
}

// operators, longest first so that <= is not read as < then =.
var operators = []string{"::", "<>", "!=", "<=", ">=", "!~", "||", "==", "(", ")", "[", "]", ",",
	"=", "<", ">", "~", "+", "-", "*", "/", "%"}

var (
	identRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*`)
	numberRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?`)
)

func tokenize(s string) ([]token, error) {
	var out []token
	for len(s) > 0 {
		switch {
		case strings.ContainsRune(" \t\r\n", rune(s[0])):
			s = s[1:]
		case strings.HasPrefix(s, "--"):
			end := strings.IndexByte(s, '\n')
			if end < 0 {
				end = len(s) - 1
			}
			s = s[end+1:]
		case strings.HasPrefix(s, "/*"):
			end := strings.Index(s, "*/")
			if end < 0 {
				return nil, errors.New("unterminated comment")
			}
			s = s[end+2:]
		case s[0] == '\'' || s[0] == '"':
			text, rest, err := quoted(s)
			if err != nil {
				return nil, err
			}
			kind := tokString
			if s[0] == '"' {
				kind = tokIdent
			}
			out, s = append(out, token{kind, text}), rest
		case identRE.MatchString(s):
			word := identRE.FindString(s)
			if up := strings.ToUpper(word); keywords[up] {
				out = append(out, token{tokKeyword, up})
			} else {
				out = append(out, token{tokIdent, strings.ToLower(word)})
			}
			s = s[len(word):]
		case numberRE.MatchString(s):
			num := numberRE.FindString(s)
			out, s = append(out, token{tokNumber, num}), s[len(num):]
		default:
			op := ""
			for _, o := range operators {
				if strings.HasPrefix(s, o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, fmt.Errorf("unexpected character %q", s[0])
			}
			out, s = append(out, token{tokOp, op}), s[len(op):]
		}
	}
	return out, nil
}

// quoted reads a '...' or "..." at the start of s, where a doubled quote stands for itself.
func quoted(s string) (text, rest string, err error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] != q {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == q {
			b.WriteByte(q)
			i++
			continue
		}
		return b.String(), s[i+1:], nil
	}
	return "", "", fmt.Errorf("unterminated %c", q)
}
