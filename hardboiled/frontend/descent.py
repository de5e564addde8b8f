"""A recursive-descent reader of the Halide IR that Halide prints, which
builds the tree that the LALR parser of grammars/halide_ir.lark builds
(syntax_tree.py's classes, of the shape of Lark's), about twice as fast,
and without loading Lark.

Lark's LALR engine spends most of a parse in its per-token loop, and Halide
dumps run to megabytes. Almost every dump uses a small part of the grammar:
statements, loops, allocations, stores and expressions. This reader
handles that part, with the terminals and keywords of the grammar (the
scanner table that grammar.py makes from them), and gives up
(``Unhandled``) on anything else: a form it does not read, a syntax error,
or a token that the grammar's contextual lexer might read otherwise (a
keyword used as a name, a spaced ``*`` outside an allocation). The caller
then parses the text with Lark, which stays the definition of the language
and the source of every syntax error's diagnostic. So the reader only ever
decides how fast an input is read, never whether it is accepted nor how it
reads: tests/frontend/test_descent.py compares its trees with Lark's, token
positions included, over every real dump in the fixtures.

One shape differs, by design: eight or more integer literals in a row as
a call's arguments (a shuffle's lane indices, up to thousands) are one
``IntRun``, which stands for their ``int_lit`` trees (``IntRun.trees``,
what the comparison with Lark expands) and which the builder reads at
once.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import Any

from hardboiled.frontend.grammar import current_scanner_table, stored_scanner_table
from hardboiled.frontend.literals import SHORT_INT32
from hardboiled.frontend.scanning import INT_RUN, SHORTEST_RUN, Scanner, Unhandled, split_runs
from hardboiled.frontend.syntax_tree import IntRun, Lines, Token, Tree

_END = "$END"
_new_str = str.__new__
_LITERALS = {"INT": "int_lit", "FLOAT": "float_lit", "STRING": "string_lit"}
"""The literal terminals, and the rule each reads as."""

_MIN_RUN = SHORTEST_RUN
"""Fewer integer arguments in a row (``ramp(x, 1, 8)``) are read as trees
one by one: an ``IntRun`` pays only where there are many (and the scanner
matches only that many at once)."""


@lru_cache(maxsize=1)
def scanner() -> Scanner:
    """The scanner, made on first use (4 ms: the stored table read and
    its expressions compiled); the compile server makes it before it forks
    its workers (cli/server.py)."""
    return Scanner(stored_scanner_table() or current_scanner_table())


def parse_tree(text: str) -> Tree:
    """The tree of ``text`` (ending in a newline), or ``Unhandled``."""
    return _Reader(text, scanner()).whole()


class _Reader:
    """One parse: the tokens, scanned at once, the current one (``kind``
    and ``value``), and a method per rule of the grammar that it reads."""

    def __init__(self, text: str, scanner: Scanner):
        self.text = text
        self.keywords = scanner.keywords
        self.kinds, self.values, self.ends = scanner.scan(text)
        self.kinds.append(_END)
        self.values.append("")
        self.ends.append(len(text))
        self.lines = Lines(text)
        self.index = 0
        self.kind, self.value = self.kinds[0], self.values[0]

    # ------------------------------------------------------------ tokens
    def advance(self) -> None:
        index = self.index = self.index + 1
        self.kind, self.value = self.kinds[index], self.values[index]

    def take(self) -> Token:
        """The current token as a ``Token``, then advance (written out here
        and in ``expect``: the two run once per token, a call less each)."""
        value = self.value
        index = self.index
        end = self.ends[index]
        token = _new_str(Token, value)
        token.type, token.start_pos, token.end_pos, token.lines = self.kind, end - len(value), end, self.lines
        index = self.index = index + 1
        self.kind, self.value = self.kinds[index], self.values[index]
        return token

    def expect(self, kind: str) -> None:
        if self.kind != kind:
            raise Unhandled
        index = self.index = self.index + 1
        self.kind, self.value = self.kinds[index], self.values[index]

    def is_keyword(self, word: str) -> bool:
        return self.kind == "NAME" and self.value == word

    def name(self) -> Token:
        """A NAME read as a name: one spelled as a keyword is left to Lark,
        whose lexer may read it as the keyword."""
        if self.kind != "NAME" or self.value in self.keywords:
            raise Unhandled
        return self.take()

    # ------------------------------------------------------------ modules
    def whole(self) -> Tree:
        if self.kind == "_NL":
            self.advance()
        top = self.module() if self.kind == "MODULE_HEADER" else self.stmt_list()
        if self.kind != _END:
            raise Unhandled
        return Tree("start", [top])

    def module(self) -> Tree:
        children: list[Any] = [self.take()]
        self.expect("_NL")
        while self.is_keyword("buffer"):
            self.advance()
            name = self.name()
            self.expect("=")
            if self.kind != "BUFFER_BODY":
                raise Unhandled
            children.append(Tree("buffer_decl", [name, self.take()]))
            self.expect("_NL")
        while self.kind == "LINKAGE":
            func: list[Any] = [self.take()]
            if not self.is_keyword("func"):
                raise Unhandled
            self.advance()
            func.append(self.name())
            func.extend(self.arguments(self.name))
            func.append(self.body())
            self.expect("_NL")
            children.append(Tree("func", func))
        if len(children) == 1 or children[-1].data != "func":
            raise Unhandled
        return Tree("module", children)

    # ------------------------------------------------------------ statements
    def stmt_list(self) -> Tree:
        statements = []
        while self.kind != "}" and self.kind != _END:
            statements.append(self.statement())
        if not statements:
            raise Unhandled
        return Tree("stmt_list", statements)

    def body(self) -> Tree:
        self.expect("{")
        self.expect("_NL")
        if self.kind == "}":
            self.advance()
            return Tree("body", [])
        statements = self.stmt_list()
        self.expect("}")
        return Tree("body", [statements])

    def statement(self) -> Tree:
        kind = self.kind
        if kind == "FOR_KIND":
            return self.for_stmt()
        if kind == "NAME":
            value = self.value
            if value in self.keywords:
                read = self._keyword_statements.get(value)
                if read is None:
                    raise Unhandled
                return read(self)
            return self.store_or_evaluate()
        value_tree = self.expr()
        self.expect("_NL")
        return Tree("evaluate_stmt", [value_tree])

    def store_or_evaluate(self) -> Tree:
        name = self.name()
        if self.kind != "[":
            # A call (a provide `f(x) = ...` is left to Lark) or a name.
            value_tree = self.call_or_variable(name)
            if self.kind == "BIN_OP":
                value_tree = self.chain(value_tree)
            self.expect("_NL")
            return Tree("evaluate_stmt", [value_tree])
        return self.store(name)

    def store(self, name: Token) -> Tree:
        self.advance()
        index = self.expr()
        alignment = self.alignment()
        self.expect("]")
        self.expect("=")
        value_tree = self.let_lines() if self.kind == "_NL" else self.expr()
        self.expect("_NL")
        return Tree("store_stmt", [name, index, alignment, value_tree])

    def let_lines(self) -> Tree:
        self.advance()
        lines: list[Any] = []
        while self.is_keyword("let"):
            name = self.binding()
            if self.is_keyword("let"):
                value_tree = self.let_expr(self.operand_chain)
            else:
                value_tree = self.predicated_or_chain()
            if not self.is_keyword("in"):
                raise Unhandled
            self.advance()
            self.expect("_NL")  # a let expression in the body is Lark's
            lines.append(Tree("let_line", [name, value_tree]))
        if not lines:
            raise Unhandled
        lines.append(self.expr())
        return Tree("let_lines", lines)

    def let_stmt(self) -> Tree:
        """``let x = v``, or a line that evaluates ``let x = v in e``."""
        name = self.binding()
        if self.is_keyword("let"):
            value_tree = self.let_expr(self.expr)
        else:
            parenthesized = self.kind == "("
            value_tree = self.atom()
            if self.kind == "BIN_OP":
                value_tree = self.chain(value_tree)
            if self.is_keyword("in"):  # the value is an operand chain: `let x = v in e`
                self.advance()
                body = self.expr()
                self.expect("_NL")
                return Tree("evaluate_stmt", [Tree("let_expr", [name, value_tree, body])])
            if self.is_keyword("if") and value_tree.data != "binop_chain":
                if parenthesized:
                    raise Unhandled
                value_tree = self.predicated(value_tree)
        self.expect("_NL")
        return Tree("let_stmt", [name, value_tree])

    def assert_stmt(self) -> Tree:
        self.advance()
        self.expect("(")
        condition = self.expr()
        self.expect(",")
        message = self.expr()
        self.expect(")")
        self.expect("_NL")
        return Tree("assert_stmt", [condition, message])

    def for_stmt(self) -> Tree:
        children: list[Any] = [self.take()]
        if self.kind == "DEVICE_API":
            children.append(self.take())
        self.expect("(")
        children.append(self.name())
        self.expect(",")
        children.append(self.expr())
        self.expect(",")
        children.append(self.expr())
        self.expect(")")
        children.append(self.body())
        self.expect("_NL")
        return Tree("for_stmt", children)

    def allocate_stmt(self) -> Tree:
        self.advance()
        children: list[Any] = [self.name()]
        self.expect("[")
        if self.kind == "NAME":
            children.append(Tree("alloc_type", [self.name()]))
        elif self.kind == "HANDLE_TYPE":
            children.append(Tree("alloc_type", [self.take()]))
        else:
            raise Unhandled
        while self.kind == "_ALLOC_TIMES":
            self.advance()
            children.append(self.expr())  # padded extents, `* (e * e + p)`, stop it: Lark's
        self.expect("]")
        if self.is_keyword("in"):
            self.advance()
            children.append(Tree("memory_type", [self.name()]))
        if self.is_keyword("if"):
            self.advance()
            children.append(Tree("alloc_condition", [self.expr()]))
        self.expect("_NL")
        if self.is_keyword("custom_new"):
            self.advance()
            self.expect("{")
            children.append(Tree("custom_new", [self.expr()]))
            self.expect("}")
            self.expect("_NL")
        if self.is_keyword("custom_delete"):
            self.advance()
            self.expect("{")
            delete: list[Any] = [self.name()]
            self.expect("(")
            if self.kind != ")":
                delete.append(self.name())
            self.expect(")")
            self.expect(";")
            self.expect("}")
            self.expect("_NL")
            children.append(Tree("custom_delete", delete))
        return Tree("allocate_stmt", children)

    def free_stmt(self) -> Tree:
        self.advance()
        name = self.name()
        self.expect("_NL")
        return Tree("free_stmt", [name])

    def produce_stmt(self) -> Tree:
        return self._producer_consumer("produce_stmt")

    def consume_stmt(self) -> Tree:
        return self._producer_consumer("consume_stmt")

    def _producer_consumer(self, rule: str) -> Tree:
        self.advance()
        name = self.name()
        body = self.body()
        self.expect("_NL")
        return Tree(rule, [name, body])

    def if_stmt(self) -> Tree:
        self.advance()
        children = self._condition_and_body()
        if self.is_keyword("else"):
            children.append(self.else_part())
        self.expect("_NL")
        return Tree("if_stmt", children)

    def _condition_and_body(self) -> list[Any]:
        condition = self.parenthesized()
        return [condition, self.body()]

    def else_part(self) -> Tree:
        self.advance()
        if not self.is_keyword("if"):
            return Tree("else_part", [self.body()])
        self.advance()
        children = self._condition_and_body()
        if self.is_keyword("else"):
            children.append(self.else_part())
        return Tree("else_if", children)

    def predicated_store(self) -> Tree:
        self.advance()
        predicate = self.parenthesized()
        self.expect("_NL")
        name = self.name()
        if self.kind != "[":
            raise Unhandled  # a predicated provide
        return Tree("predicated_store", [predicate, self.store(name)])

    _keyword_statements: dict[str, Callable[[_Reader], Tree]] = {
        "let": let_stmt, "assert": assert_stmt, "allocate": allocate_stmt, "free": free_stmt,
        "produce": produce_stmt, "consume": consume_stmt, "if": if_stmt, "predicate": predicated_store,
    }

    # ------------------------------------------------------------ expressions
    def expr(self) -> Any:
        """``?expr``: an atom, a chain, a let expression or a predicated load."""
        if self.kind == "NAME" and self.value == "let":  # is_keyword, written out: once per expression
            return self.let_expr(self.expr)
        return self.predicated_or_chain()

    def predicated_or_chain(self) -> Any:
        parenthesized = self.kind == "("
        first = self.atom()
        kind = self.kind
        if kind == "BIN_OP":
            return self.chain(first)
        if kind == "NAME" and self.value == "if":
            if parenthesized:
                raise Unhandled  # `(b[i]) if c` is no predicated load
            return self.predicated(first)
        return first

    def predicated(self, first: Any) -> Tree:
        if first.data == "typed" and first.children[1].data == "load":
            first = Tree("typed_load", first.children)
        elif first.data != "load":
            raise Unhandled
        self.advance()
        return Tree("predicated_load", [first, self.operand_chain()])

    def operand_chain(self) -> Any:
        first = self.atom()
        return self.chain(first) if self.kind == "BIN_OP" else first

    def chain(self, first: Any) -> Tree:
        children = [first]
        while self.kind == "BIN_OP":
            children.append(self.take())
            children.append(self.atom())
        return Tree("binop_chain", children)

    def binding(self) -> Token:
        """``let NAME =``: the name."""
        self.advance()
        name = self.name()
        self.expect("=")
        return name

    def let_expr(self, body: Callable[[], Any]) -> Tree:
        name = self.binding()
        value_tree = self.operand_chain()
        if not self.is_keyword("in"):
            raise Unhandled
        self.advance()
        return Tree("let_expr", [name, value_tree, body()])

    def atom(self) -> Any:
        kind = self.kind
        if kind == "NAME":
            if self.value in self.keywords:  # ``name``, written out: once per name read
                raise Unhandled
            return self.call_or_variable(self.take())
        literal = _LITERALS.get(kind)
        if literal is not None:
            return Tree(literal, [self.take()])
        if kind == "(":
            return self.parenthesized()
        if kind == "TYPE_PREFIX" or kind == "HANDLE_TYPE":
            prefix = self.take()
            return Tree("typed", [prefix, self.typed_operand()])
        if kind == "!":
            self.advance()
            return Tree("not_", [self.atom()])
        if kind == "REINTERPRET":
            token = self.take()
            return Tree("reinterpret", [token, self.parenthesized()])
        if kind == INT_RUN:  # a run of literals that starts here, not after a call's comma
            self.split_run()
            return self.atom()
        raise Unhandled

    def typed_operand(self) -> Any:
        """What a type prefix applies to: no string, no second prefix."""
        kind = self.kind
        if kind == "NAME":
            return self.call_or_variable(self.name())
        if kind == "INT" or kind == "FLOAT":
            return Tree(_LITERALS[kind], [self.take()])
        if kind == "(":
            return Tree("cast_operand", [self.parenthesized()])
        if kind == INT_RUN:
            self.split_run()
            return self.typed_operand()
        raise Unhandled

    def arguments(self, item: Callable[[], Any]) -> list[Any]:
        """``"(" [ITEM ("," ITEM)*] ")"``: the items, or ``[None]`` (Lark's
        placeholder for the absent list)."""
        self.expect("(")
        if self.kind == ")":
            self.advance()
            return [None]
        literal_runs = item == self.expr
        items = [item()]
        while self.kind == ",":
            self.advance()
            if literal_runs:
                if self.kind == INT_RUN and self.run_argument(items):
                    if self.kinds[self.index - 1] == INT_RUN:
                        break  # the run took the last argument
                elif self.kind == "INT" and self.int_run(items) and self.kinds[self.index - 1] == "INT":
                    break  # the run took the last argument
            items.append(item())
        self.expect(")")
        return items

    def run_argument(self, items: list[Any]) -> bool:
        """The scanner's run of integer literals (``INT_RUN``) taken as one
        ``IntRun``, as ``int_run`` would take its tokens: up to the ``)``
        after it, or the comma after it where an argument other than an
        integer follows. False, with the run split into its tokens (for
        ``int_run``), where ``int_run`` would take otherwise: a literal
        longer than ``SHORT_INT32`` characters, or the last one continuing
        into an expression (``8 + x``)."""
        index = self.index
        kinds = self.kinds
        after = kinds[index + 1]
        numbers = self.values[index].split(", ")
        if (after == ")" or (after == "," and kinds[index + 2] not in ("INT", INT_RUN))) \
                and max(map(len, numbers)) <= SHORT_INT32:
            items.append(IntRun.scanned(numbers, self.ends[index], self.lines))
            index = self.index = index + 1 if after == ")" else index + 2
            self.kind, self.value = kinds[index], self.values[index]
            return True
        self.split_run()
        return False

    def split_run(self) -> None:
        """The current token, a run of integer literals, replaced by the
        INT and comma tokens it stands for (the grammar's)."""
        index = self.index
        kinds, values, ends = split_runs([INT_RUN], [self.values[index]], [self.ends[index]])
        self.kinds[index : index + 1] = kinds
        self.values[index : index + 1] = values
        self.ends[index : index + 1] = ends
        self.kind, self.value = self.kinds[index], self.values[index]

    def int_run(self, items: list[Any]) -> bool:
        """At least ``_MIN_RUN`` arguments that are each an integer literal
        of nine characters or fewer and nothing more (an ``INT`` then a
        comma, or the last one then ``)``), taken as one ``IntRun``; False,
        taking nothing, where fewer start here. The run ends after the last
        argument, or after the comma before an argument that is not one."""
        kinds, values = self.kinds, self.values
        start = index = self.index
        while kinds[index] == "INT" and kinds[index + 1] == "," and len(values[index]) <= SHORT_INT32:
            index += 2
        if kinds[index] == "INT" and kinds[index + 1] == ")" and len(values[index]) <= SHORT_INT32:
            index += 1
        if (index - start + 1) // 2 < _MIN_RUN:
            return False
        items.append(IntRun(values[start:index:2], self.ends[start:index:2], self.lines))
        self.index = index
        self.kind, self.value = kinds[index], values[index]
        return True

    def parenthesized(self) -> Any:
        self.expect("(")
        inner = self.expr()
        self.expect(")")
        return inner

    def call_or_variable(self, name: Token) -> Tree:
        kind = self.kind
        if kind == "(":
            return Tree("call", [name, *self.arguments(self.expr)])
        if kind == "[":
            self.advance()
            index = self.expr()
            alignment = self.alignment()
            self.expect("]")
            return Tree("load", [name, index, alignment])
        return Tree("var", [name])

    def alignment(self) -> Tree | None:
        if not self.is_keyword("aligned"):
            return None
        self.advance()
        self.expect("(")
        if self.kind != "INT":
            raise Unhandled
        modulus = self.take()
        self.expect(",")
        if self.kind != "INT":
            raise Unhandled
        remainder = self.take()
        self.expect(")")
        return Tree("alignment", [modulus, remainder])
