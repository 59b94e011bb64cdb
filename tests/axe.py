"""axe-core (site/node_modules, npm) run in a Playwright page: the accessibility audit shared by the
website's and the slides' tests. WCAG 2.0 and 2.1, levels A and AA, as a university's rule asks.

    violations = axe_violations(page)                 # [] when the page passes
    assert not violations, describe(violations)

An exception is a (rule id, CSS selector, why) triple passed as `allowed`: a node that matches the
selector is not counted for that rule, and the reason stays in the test beside it (the pattern
pydata-sphinx-theme's own accessibility tests use).
"""
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]
AXE = ROOT / "site" / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]

RUN = """async ([tags, allowed]) => {
    const result = await axe.run(document, {runOnly: {type: 'tag', values: tags},
                                            resultTypes: ['violations']});
    const excused = (rule, target) => {
        const element = document.querySelector(target[0]);
        return element && allowed.some(([id, selector]) => id === rule && element.matches(selector));
    };
    return result.violations.map((v) => ({
        id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.filter((n) => !excused(v.id, n.target))
            .map((n) => ({target: n.target.join(' '), html: n.html.slice(0, 160),
                          summary: (n.failureSummary || '').split('\\n').slice(0, 2).join(' ')}))
    })).filter((v) => v.nodes.length);
}"""


def axe_violations(page, allowed=()):
    """The page's WCAG A/AA violations, less the `allowed` (rule, selector, why) exceptions."""
    if not AXE.exists():
        raise FileNotFoundError(f"{AXE.relative_to(ROOT)} is missing: run `npm ci --prefix site`")
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    return page.evaluate(RUN, [TAGS, [[rule, selector] for rule, selector, _why in allowed]])


def describe(violations, limit=12):
    """One line per violating node, for an assertion message."""
    lines = []
    for violation in violations:
        for node in violation["nodes"]:
            lines.append(f"{violation['id']} ({violation['impact']}): {node['target']}: {node['summary']}")
    more = f"\n... and {len(lines) - limit} more" if len(lines) > limit else ""
    return "\n".join(lines[:limit]) + more
