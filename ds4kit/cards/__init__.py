"""Model cards: resolution (explicit > sidecar > search path > bundled > family > hard
fallback), validation, and thinking budgets derived from them (seed defect 3)."""
from ds4kit.cards.budget import Budget, derive_thinking_budget
from ds4kit.cards.loader import CardError, load_card, validate_card
from ds4kit.cards.names import normalise_name
from ds4kit.cards.resolve import HARD_FALLBACK_CARD, SOURCES, CardResolution, resolve_card

__all__ = [
    "HARD_FALLBACK_CARD",
    "SOURCES",
    "Budget",
    "CardError",
    "CardResolution",
    "derive_thinking_budget",
    "load_card",
    "normalise_name",
    "resolve_card",
    "validate_card",
]
