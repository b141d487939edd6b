"""okra_controllers.templating: the one `{{…}}` renderer every template goes through."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from okra_controllers.templating import (
    ARGS,
    DOTTED,
    Syntax,
    TemplateError,
    placeholders,
    render,
    render_labels,
    render_strings,
)

EKS = {
    "awseks": {"cluster": {"name": "eks1", "tags": {"version": "v2", "kubernetes.io/role": "web"}}}
}

# -- substitution -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{{.awseks.cluster.name}}", "eks1"),
        ("{{ .awseks.cluster.name }}", "eks1"),
        ("{{.awseks.cluster.name}}-{{ .awseks.cluster.tags.version }}", "eks1-v2"),
        ("plain", "plain"),
        ("", ""),
        ("{{.awseks.cluster.tags.kubernetes.io/role}}", "web"),  # a key with dots in it
        ("{.awseks.cluster.name}", "{.awseks.cluster.name}"),
        ("{{{.awseks.cluster.name}}}", "{eks1}"),
    ],
)
def test_dotted_placeholders_are_substituted(text: str, expected: str) -> None:
    assert render(text, EKS) == expected


def test_nested_paths_walk_mappings_and_prefer_the_longest_key() -> None:
    variables = {"a": {"b": {"c": "deep"}, "b.c": "flat"}, "x": {"y": 1}}
    assert render("{{.a.b.c}}", variables) == "flat"
    assert render("{{.x.y}}", variables) == "1"
    assert render("{{.a.b.c}}", {"a": {"b": {"c": "deep"}}}) == "deep"


@pytest.mark.parametrize(
    ("value", "text"), [(True, "true"), (False, "false"), (3, "3"), (1.5, "1.5")]
)
def test_single_values_are_inserted_as_text(value: object, text: str) -> None:
    assert render("{{.v}}", {"v": value}) == text


def test_text_of_another_tool_is_left_as_written() -> None:
    go_template = '{{index .metadata.labels "version"}} {{.name}} {{ args.x }}'
    assert render(go_template, {"name": "n"}, Syntax(roots=frozenset({"awseks"}))) == go_template
    assert render("{{.args.x}} {{args.x}}", {"args": {"x": "1"}}, ARGS) == "{{.args.x}} 1"
    assert render("{{args.x}}", {"args": {"x": "1"}}, DOTTED) == "{{args.x}}"


def test_the_dot_is_optional_where_the_syntax_says_so() -> None:
    either = Syntax(dot="optional")
    assert render("{{cell}}/{{.cell}}/{{ cell }}", {"cell": "c"}, either) == "c/c/c"


# -- missing variables ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "variables", "syntax", "message"),
    [
        (
            "{{.awseks.cluster.tags.nope}}",
            EKS,
            DOTTED,
            "template variable {{.awseks.cluster.tags.nope}} is not defined"
            " (awseks.cluster.tags has: kubernetes.io/role, version)",
        ),
        ("{{.nope}}", EKS, DOTTED, "template variable {{.nope}} is not defined"),
        (
            "{{ args.who }}",
            {"args": {}},
            ARGS,
            "template variable {{args.who}} is not defined (args has: none)",
        ),
        (
            "{{.awseks.cluster.name.first}}",
            EKS,
            DOTTED,
            "template variable {{.awseks.cluster.name.first}} is not defined:"
            " awseks.cluster.name is a single value, it has no 'first'",
        ),
        (
            "{{.awseks.cluster}}",
            EKS,
            DOTTED,
            "template variable {{.awseks.cluster}} is not a single value",
        ),
    ],
)
def test_a_missing_variable_is_an_error_naming_it(
    text: str, variables: dict[str, Any], syntax: Syntax, message: str
) -> None:
    with pytest.raises(TemplateError) as info:
        render(text, variables, syntax)
    assert str(info.value) == message
    assert info.value.placeholder in message


def test_missing_may_read_as_given_text_instead() -> None:
    assert render("[{{.a}}|{{.b}}]", {"a": "x"}, missing="") == "[x|]"


# -- escaping -----------------------------------------------------------------------------------


def test_json_escape_keeps_a_json_document_valid() -> None:
    doc = json.dumps({"query": "up{job='{{args.job}}'}", "n": 1})
    evil = 'a"b\\c\n}'
    out = render(doc, {"args": {"job": evil}}, ARGS, escape="json")
    assert json.loads(out) == {"query": f"up{{job='{evil}'}}", "n": 1}


# -- helpers ------------------------------------------------------------------------------------


def test_render_strings_renders_every_string_and_no_key() -> None:
    value = {"{{.k}}": ["{{.k}}", {"x": "{{.k}}"}, 3, None]}
    assert render_strings(value, {"k": "v"}) == {"{{.k}}": ["v", {"x": "v"}, 3, None]}


def test_placeholders_lists_only_the_callers() -> None:
    text = "{{args.a}} {{ args.b.c }} {{.args.d}} {{other}} {{args.a}}"
    assert list(placeholders(text, ARGS)) == ["args.a", "args.b.c", "args.a"]


def test_render_labels_rejects_values_the_api_server_would() -> None:
    assert render_labels({"v": "{{.awseks.cluster.tags.version}}"}, EKS) == {"v": "v2"}
    with pytest.raises(TemplateError, match=r"label v='a b' \(from template '\{\{\.s\}\}'\)"):
        render_labels({"v": "{{.s}}"}, {"s": "a b"})
    with pytest.raises(TemplateError, match="at most 63 characters"):
        render_labels({"v": "{{.s}}"}, {"s": "x" * 64})


# -- properties ---------------------------------------------------------------------------------

_NAME = st.from_regex(r"[A-Za-z_][A-Za-z0-9_-]{0,8}", fullmatch=True)
_VALUE = st.text(max_size=20)
_TREE: st.SearchStrategy[dict[str, Any]] = st.recursive(
    st.dictionaries(_NAME, _VALUE, max_size=4),
    lambda inner: st.dictionaries(_NAME, st.one_of(_VALUE, inner), max_size=4),
    max_leaves=12,
)


def _leaves(tree: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    out = []
    for k, v in tree.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict):
            out += _leaves(v, path + ".")
        else:
            out.append((path, v))
    return out


@given(_TREE, st.data())
def test_every_leaf_renders_to_its_value(tree: dict[str, Any], data: st.DataObject) -> None:
    leaves = _leaves(tree)
    if not leaves:
        return
    path, value = data.draw(st.sampled_from(leaves))
    pad = data.draw(st.sampled_from(["", " ", "  "]))
    assert render(f"<{{{{{pad}.{path}{pad}}}}}>", tree) == f"<{value}>"
    assert json.loads('"' + render(f"{{{{.{path}}}}}", tree, escape="json") + '"') == value


@given(_TREE, _NAME)
def test_an_unknown_name_is_an_error_naming_it(tree: dict[str, Any], name: str) -> None:
    if name in tree:
        return
    with pytest.raises(TemplateError) as info:
        render(f"x {{{{.{name}}}}} y", tree)
    assert f"{{{{.{name}}}}}" in str(info.value)
    assert info.value.path == name


@given(st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=60))
def test_text_without_placeholders_is_unchanged(text: str) -> None:
    assert render(text, {}) == text


@given(st.text(max_size=60))
def test_rendering_never_fails_on_text_the_caller_does_not_own(text: str) -> None:
    owned = Syntax(dot="none", roots=frozenset({"zz_owned"}))
    assert render(text, {}, owned) == text


@given(st.lists(st.tuples(_NAME, _VALUE), min_size=1, max_size=5, unique_by=lambda t: t[0]))
def test_rendering_is_one_pass(pairs: list[tuple[str, str]]) -> None:
    """A value that looks like a placeholder is inserted as is, never rendered again."""
    variables = {k: "{{." + k + "}}" + v for k, v in pairs}
    text = "".join("{{." + k + "}}" for k, _ in pairs)
    assert render(text, variables) == "".join(variables[k] for k, _ in pairs)
