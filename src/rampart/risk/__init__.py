"""Risk-framework mapping: what a test tested, mapped to the items of versioned frameworks.

rampart ships curated tables (``_data``) from its strategies, built-in harm categories,
the built-in payload pack's families and payloads, and AgentDojo's injection tasks to
the OWASP Top 10 for LLM Applications 2025, the OWASP Top 10 for Agentic Applications
2026 and MITRE ATLAS 5.6.0; every entry carries its source and rationale, and every
item id is checked against the framework version it names. ``RiskMap.load`` adds
users' own map files; ``risk_coverage`` is the coverage matrix the JSON and HTML
reports show, and SARIF names its rules' framework items from the same map. See
``docs/risk-mapping.md``.
"""

from rampart.risk._coverage import FrameworkCoverage, ItemCoverage, RiskCoverage, risk_coverage
from rampart.risk._subjects import risk_subjects
from rampart.risk._tables import Framework, FrameworkItem, RiskEntry, RiskGap, RiskMap

__all__ = [
    "Framework",
    "FrameworkCoverage",
    "FrameworkItem",
    "ItemCoverage",
    "RiskCoverage",
    "RiskEntry",
    "RiskGap",
    "RiskMap",
    "risk_coverage",
    "risk_subjects",
]
