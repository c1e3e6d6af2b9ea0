package migratetest

import (
	"fmt"
	"regexp"
	"strings"
)

// node is a parsed check expression; print writes its canonical form.
type node interface{ print(b *strings.Builder) }

type (
	leaf string // identifier, number, keyword literal or quoted string, as printed
	call struct {
		name string
		args []node
	}
	array []node
	unary struct {
		op string // NOT, -
		x  node
	}
	binary struct {
		op   string
		l, r node
	}
	isNull struct {
		x   node
		not bool
	}
	inList struct {
		x    node
		list []node
	}
)

func canonical(n node) string {
	var b strings.Builder
	n.print(&b)
	return b.String()
}

func (l leaf) print(b *strings.Builder) { b.WriteString(string(l)) }

func (c call) print(b *strings.Builder) { b.WriteString(c.name); printList(b, "(", c.args, ")") }

func (a array) print(b *strings.Builder) { printList(b, "ARRAY[", a, "]") }

func (u unary) print(b *strings.Builder) {
	if u.op == "NOT" {
		b.WriteString("NOT ")
	} else {
		b.WriteString(u.op)
	}
	operand(b, u.x)
}

func (n binary) print(b *strings.Builder) {
	operand(b, n.l)
	b.WriteString(" " + n.op + " ")
	operand(b, n.r)
}

func (n isNull) print(b *strings.Builder) {
	operand(b, n.x)
	if n.not {
		b.WriteString(" IS NOT NULL")
	} else {
		b.WriteString(" IS NULL")
	}
}

func (n inList) print(b *strings.Builder) {
	operand(b, n.x)
	printList(b, " IN (", n.list, ")")
}

// operand parenthesises an operator's operand unless it is atomic, so that printing needs no
// precedence table and the printed form parses back to the same tree.
func operand(b *strings.Builder, n node) {
	switch n.(type) {
	case leaf, call, array:
		n.print(b)
	default:
		b.WriteByte('(')
		n.print(b)
		b.WriteByte(')')
	}
}

func printList(b *strings.Builder, open string, ns []node, close string) {
	b.WriteString(open)
	for i, n := range ns {
		if i > 0 {
			b.WriteString(", ")
		}
		n.print(b)
	}
	b.WriteString(close)
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) done() bool { return p.pos >= len(p.toks) }

func (p *parser) peek() token {
	if p.done() {
		return token{kind: tokOp, text: "end of expression"}
	}
	return p.toks[p.pos]
}

func (p *parser) next() token {
	t := p.peek()
	p.pos++
	return t
}

func (p *parser) expect(op string) error {
	if t := p.next(); !t.is(op) {
		return fmt.Errorf("want %q, got %q", op, t.text)
	}
	return nil
}

// acceptKeyword consumes the keywords kws when they come next, all of them or none.
func (p *parser) acceptKeyword(kws ...string) bool {
	for i, kw := range kws {
		if p.pos+i >= len(p.toks) || !p.toks[p.pos+i].isKeyword(kw) {
			return false
		}
	}
	p.pos += len(kws)
	return true
}

func (p *parser) expr() (node, error) { return p.logical("OR", p.and) }

func (p *parser) and() (node, error) { return p.logical("AND", p.not) }

func (p *parser) logical(op string, operand func() (node, error)) (node, error) {
	l, err := operand()
	for err == nil && p.acceptKeyword(op) {
		var r node
		if r, err = operand(); err == nil {
			l = binary{op, l, r}
		}
	}
	return l, err
}

func (p *parser) not() (node, error) {
	if p.acceptKeyword("NOT") {
		x, err := p.not()
		return unary{"NOT", x}, err
	}
	return p.is()
}

func (p *parser) is() (node, error) {
	x, err := p.comparison()
	for err == nil {
		switch {
		case p.acceptKeyword("IS", "NULL"):
			x = isNull{x: x}
		case p.acceptKeyword("IS", "NOT", "NULL"):
			x = isNull{x: x, not: true}
		default:
			return x, nil
		}
	}
	return x, err
}

var comparisons = map[string]string{"=": "=", "==": "=", "<>": "<>", "!=": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}

func (p *parser) comparison() (node, error) {
	l, err := p.pattern()
	for err == nil {
		op, ok := comparisons[p.peek().text]
		if !ok || p.peek().kind != tokOp {
			return l, nil
		}
		p.next()
		var r node
		if r, err = p.pattern(); err == nil {
			l = compare(op, l, r)
		}
	}
	return l, err
}

// compare builds l op r, reading PostgreSQL's x = ANY (ARRAY[..]) as the IN list it was written as.
func compare(op string, l, r node) node {
	if c, ok := r.(call); ok && op == "=" && c.name == "ANY" && len(c.args) == 1 {
		if list, ok := c.args[0].(array); ok {
			return inList{l, list}
		}
	}
	return binary{op, l, r}
}

// pattern reads BETWEEN, IN, GLOB and LIKE, each optionally negated with NOT.
func (p *parser) pattern() (node, error) {
	x, err := p.other()
	if err != nil {
		return nil, err
	}
	negated := p.acceptKeyword("NOT")
	var n node
	switch kw := p.peek(); {
	case kw.isKeyword("BETWEEN"):
		n, err = p.between(x)
	case kw.isKeyword("IN"):
		p.next()
		var list []node
		if list, err = p.list("(", ")"); err == nil {
			n = inList{x, list}
		}
	case kw.isKeyword("GLOB"), kw.isKeyword("LIKE"):
		p.next()
		var r node
		if r, err = p.other(); err == nil {
			n = binary{kw.text, x, r}
		}
	default:
		if negated {
			return nil, fmt.Errorf("NOT before %q", kw.text)
		}
		return x, nil
	}
	if err == nil && negated {
		n = unary{"NOT", n}
	}
	return n, err
}

func (p *parser) between(x node) (node, error) {
	p.next()
	lo, err := p.other()
	if err != nil {
		return nil, err
	}
	if !p.acceptKeyword("AND") {
		return nil, fmt.Errorf("BETWEEN without AND")
	}
	hi, err := p.other()
	if err != nil {
		return nil, err
	}
	return binary{"AND", binary{">=", x, lo}, binary{"<=", x, hi}}, nil
}

// other reads the operators PostgreSQL ranks between comparison and arithmetic: regular
// expression matches (!~ read as NOT ~) and concatenation.
func (p *parser) other() (node, error) {
	l, err := p.additive()
	for err == nil && p.peek().kind == tokOp {
		op := p.peek().text
		if op != "~" && op != "!~" && op != "||" {
			break
		}
		p.next()
		var r node
		if r, err = p.additive(); err == nil {
			if op == "!~" {
				l = unary{"NOT", binary{"~", l, r}}
			} else {
				l = binary{op, l, r}
			}
		}
	}
	return l, err
}

func (p *parser) additive() (node, error) { return p.arithmetic(p.multiplicative, "+", "-") }

func (p *parser) multiplicative() (node, error) { return p.arithmetic(p.negation, "*", "/", "%") }

func (p *parser) arithmetic(operand func() (node, error), ops ...string) (node, error) {
	l, err := operand()
	for err == nil && p.peek().kind == tokOp && contains(ops, p.peek().text) {
		op := p.next().text
		var r node
		if r, err = operand(); err == nil {
			l = binary{op, l, r}
		}
	}
	return l, err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) negation() (node, error) {
	if p.peek().is("-") {
		p.next()
		x, err := p.negation()
		return unary{"-", x}, err
	}
	return p.cast()
}

// cast reads x::type and keeps x: PostgreSQL casts literals to their column's type, SQLite has no
// casts in these constraints.
func (p *parser) cast() (node, error) {
	x, err := p.primary()
	for err == nil && p.peek().is("::") {
		p.next()
		err = p.typeName()
	}
	return x, err
}

// typeName skips a type: words (timestamp with time zone), an optional (n[, m]) and any [].
func (p *parser) typeName() error {
	if p.peek().kind != tokIdent {
		return fmt.Errorf("want a type after ::, got %q", p.peek().text)
	}
	for p.peek().kind == tokIdent {
		p.next()
	}
	if p.peek().is("(") {
		if _, err := p.list("(", ")"); err != nil {
			return err
		}
	}
	for p.peek().is("[") {
		p.next()
		if err := p.expect("]"); err != nil {
			return err
		}
	}
	return nil
}

func (p *parser) primary() (node, error) {
	t := p.next()
	switch {
	case t.kind == tokNumber:
		return leaf(t.text), nil
	case t.kind == tokString:
		return leaf("'" + strings.ReplaceAll(t.text, "'", "''") + "'"), nil
	case t.isKeyword("NULL"), t.isKeyword("TRUE"), t.isKeyword("FALSE"):
		return leaf(t.text), nil
	case t.isKeyword("ARRAY"):
		list, err := p.list("[", "]")
		return array(list), err
	case t.isKeyword("ANY") && p.peek().is("("):
		args, err := p.list("(", ")")
		return call{t.text, args}, err
	case t.kind == tokIdent && p.peek().is("("):
		args, err := p.list("(", ")")
		return call{identifier(t.text), args}, err
	case t.kind == tokIdent:
		return leaf(identifier(t.text)), nil
	case t.is("("):
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		return x, p.expect(")")
	}
	return nil, fmt.Errorf("unexpected %q", t.text)
}

// list reads open expr, expr, ... close (possibly empty).
func (p *parser) list(open, close string) ([]node, error) {
	if err := p.expect(open); err != nil {
		return nil, err
	}
	var out []node
	if p.peek().is(close) {
		p.next()
		return out, nil
	}
	for {
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		out = append(out, x)
		if t := p.next(); t.is(close) {
			return out, nil
		} else if !t.is(",") {
			return nil, fmt.Errorf("want , or %s, got %q", close, t.text)
		}
	}
}

var plainIdent = regexp.MustCompile(`^[a-z_][a-z0-9_$]*$`)

// identifier prints a name bare when it reads back as the same name, quoted otherwise.
func identifier(name string) string {
	if plainIdent.MatchString(name) && !keywords[strings.ToUpper(name)] {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
