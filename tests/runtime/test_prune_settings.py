"""The housekeeping settings an operator gives in the environment (runtime/housekeeping.py): a value that is
not a finite number at or above the least allowed is refused at start, naming the variable."""

from __future__ import annotations

import pytest

from ggmodules.runtime.housekeeping import PruneSettings

NAMES = (
    "GGMODULES_OUTBOX_PRUNE_MARGIN",
    "GGMODULES_PRUNE_INTERVAL_SECONDS",
    "GGMODULES_PRUNE_BATCH",
    "GGMODULES_REQUEST_LOG_RETENTION_SECONDS",
    "GGMODULES_VACUUM_INTERVAL_SECONDS",
)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("value", ["abc", "nan", "inf", "-1", "1e400"])
def test_a_setting_that_is_no_usable_number_is_refused_naming_it(name: str, value: str) -> None:
    with pytest.raises(ValueError) as refused:
        PruneSettings.from_env({name: value})
    assert name in str(refused.value) and repr(value) in str(refused.value)


def test_settings_read_digits_with_separators_and_default_when_unset() -> None:
    settings = PruneSettings.from_env(
        {"GGMODULES_PRUNE_BATCH": "2_500", "GGMODULES_VACUUM_INTERVAL_SECONDS": "0.5"}
    )
    assert (settings.batch, settings.vacuum_interval) == (2500, 0.5)
    assert PruneSettings.from_env({}) == PruneSettings()
