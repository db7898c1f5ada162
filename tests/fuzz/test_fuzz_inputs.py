"""Hypothesis over the three request forms and hand edits (bounded; the long run is benchmarks/fuzz_inputs.py).

Every input is installed only if the validators accept it; otherwise it fails
with a code from the closed enum and the whole tree's digest is unchanged.
Never another exception (exit 1 / HTTP 500).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz.inputs import SETUPS, current_ids, fresh_copy, hand_edit, make_workspace, prepare, raw_request, \
    run_hand_edit, run_request

BOUNDED = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                   suppress_health_check=list(HealthCheck))


def test_generated_requests_install_only_what_validates(tmp_path):
    template = make_workspace(tmp_path / "template")
    base, ids = template.read_topic("topics/people/dana.md"), current_ids(template)
    kinds: list[str] = []

    @BOUNDED
    @given(setup=SETUPS, data=st.data())
    def check(setup, data):
        ws = fresh_copy(template.settings.state_dir, tmp_path / "state")
        prepare(ws, setup)
        kinds.append(run_request(ws, data.draw(raw_request(base, ids))).kind)

    check()
    assert {"installed", "INVALID_ARGUMENT", "INVALID_TOPIC_FORMAT"} <= set(kinds), kinds


def test_generated_hand_edits_install_only_what_validates(tmp_path):
    template = make_workspace(tmp_path / "template")
    base = template.read_topic("topics/people/dana.md")
    kinds: list[str] = []

    @BOUNDED
    @given(setup=SETUPS, data=st.data())
    def check(setup, data):
        ws = fresh_copy(template.settings.state_dir, tmp_path / "state")
        prepare(ws, setup)
        path, draft = data.draw(hand_edit(base))
        kinds.append(run_hand_edit(ws, path, draft).kind)

    check()
    assert {"installed", "INVALID_TOPIC_FORMAT"} <= set(kinds), kinds
