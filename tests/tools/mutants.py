# ruff: noqa: E501
"""Hand mutations, one or more per rule: each breaks the rule in the production code and names the tests that
must then fail. `python -m tests.tools.mutants [ID ...]` applies each mutation in turn, runs its tests on SQLite,
restores the file and reports whether its tests caught it (killed, naming each test that failed) or not
(survived).

It edits the checkout in place (and restores it, also on Ctrl-C): run it on a clean tree, with nothing else
using that checkout. Not collected by pytest (no `test_` prefix); the results of a run go in the issue's
closing note, not in a file.
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = "services/ggmodules/"


@dataclass(frozen=True)
class Mutant:
    id: str
    rule: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


M = Mutant
MUTANTS = [
    M("kind-word", "R1", "core/kinds.py", "kind = _BY_WORD.get(word)", "kind = _BY_WORD.get(word, Kind.TASKS)",
      ("tests/registry/test_profiles.py::test_r1_unknown_kind_word_in_a_profile_is_refused_naming_it_and_the_six",
       "tests/registry/test_fsm.py::test_r1_unknown_kind_word_in_an_fsm_edge_refuses_the_launch_naming_it_and_the_six")),
    M("history-off", "R2", "core/registry/profiles.py", "if kind is Kind.HISTORY and not config.enabled:",
      "if False:", ("tests/registry/test_profiles.py::test_r2_history_cannot_be_turned_off",)),
    M("plan-without-history", "R2", "core/modules/binding.py",
      "if history is None or history.action == BindAction.DISABLED:", "if False:",
      ("tests/modulestore/test_history.py::test_r2_history_cannot_be_left_out_of_a_plan",)),
    M("caps-configure-prompt", "R3", "storage/modulestore/agent_reads.py",
      "        render(Kind(row.kind), row.store_id, contents_of(conn, row, read_sets.load(conn, read_set_id)))\n",
      "        render(Kind(row.kind), row.store_id, contents_of(conn, row, read_sets.load(conn, read_set_id)))\n"
      "        if not row.max_items else render(Kind.BOARD, row.store_id, None)  # type: ignore[arg-type]\n",
      ("tests/modulestore/test_kinds.py::test_r3_contribution_telemetry_and_copy_rule_do_not_depend_on_run_or_profile",)),
    M("pins-before-views", "R4", "core/modules/prompt.py",
      'out += [PromptMessage("system", f"[open view: {v.id}]\\n{v.content}", "open_view") for v in h.open_views]',
      'out = [PromptMessage("system", f"[open view: {v.id}]\\n{v.content}", "open_view") for v in h.open_views]'
      " + out",
      ("tests/modulestore/test_prompt.py::test_r4_the_window_renders_slot_first_then_thread_views_and_pins",)),
    M("empty-tasks-silent", "R5", "core/modules/prompt.py",
      '(PromptMessage("system", _tasks(contents), "tasks"),)',
      'tuple(PromptMessage("system", _tasks(contents), "tasks") for _ in [1] if contents.tasks)',
      ("tests/modulestore/test_prompt.py::test_r5_tasks_are_always_a_message_of_their_own",)),
    M("index-renders-bodies", "R6", "core/modules/prompt.py", 'lines = [f"- {e.name}: {e.index_line}" for e',
      'lines = [f"- {e.name}: {e.index_line} {e.body}" for e',
      ("tests/modulestore/test_prompt.py::test_r6_markdown_index_renders_the_index_not_the_bodies",)),
    M("every-skill-body", "R7", "core/modules/prompt.py", "for name in s.read_set\n", "for name in bodies\n",
      ("tests/modulestore/test_prompt.py::test_r7_skills_render_the_catalogue_and_only_read_bodies",)),
    M("board-contributes", "R8", "core/modules/prompt.py", "return Contribution(kind, store_id, True)",
      "return Contribution(kind, store_id, kind == Kind.ARCHIVE)",
      ("tests/modulestore/test_prompt.py::test_r8_board_and_archive_contribute_nothing",)),
    M("prompt-rewritten", "R9", "core/modules/history.py", "            if state.system_prompt_set:\n",
      "            if False:\n", ("tests/modulestore/test_history.py::test_r9_system_prompt_is_set_once",)),
    M("contributions-reversed", "R10", "storage/modulestore/agent_reads.py", ".order_by(STORES.c.kind)",
      ".order_by(STORES.c.kind.desc())",
      ("tests/modulestore/test_prompt.py::test_r10_contributions_are_per_holder_in_kind_order",)),
    M("board-per-instance", "R14", "core/registry/plans.py",
      "return Binding(kind, BindAction.NAMED, Origin.RUN, named_key=RUN_BOARD_KEY, may_write=True)",
      "return Binding(kind, BindAction.CREATE, Origin.RUN, may_write=True)",
      ("tests/polyglot/test_typescript_session.py::test_r11_r14_a_fork_made_from_node_numbers_on_in_its_own_task_list_and_shares_the_one_board",
       "tests/sdk/test_session.py::test_r14_board_is_one_per_run_with_a_counter_per_prefix")),
    M("fork-restarts-task-ids", "R11", "core/modules/copying.py",
      "        return state.restamped(agent_id), figures\n",
      "        return state.restamped(agent_id), figures\n"
      "    if type(state).__name__ == 'TasksState':\n"
      "        return type(state)(dict(state.tasks), 1), figures  # type: ignore[union-attr]\n",
      ("tests/modulestore/test_copying.py::test_r11_fork_copies_contents_and_carries_counters",
       "tests/polyglot/test_typescript_session.py")),
    M("fork-gets-backlog", "R12", "usecases/modulestore/bind.py",
      "    for b, bound in bound_stores:\n        figures = bound.head.figures\n",
      "    for b, bound in bound_stores:\n        figures = bound.head.figures\n"
      "        if bound.source_store_id and figures.writes:\n"
      "            from ggmodules.wire.modulestore_events import snapshot_event\n"
      "            events.append(snapshot_event(plan.run_id, plan.agent_id, b.kind, bound.store_id,"
      " figures, None, bound.source_store_id))\n",
      ("tests/modulestore/test_copying.py::test_r12_fork_leaves_undrained_telemetry_with_the_original",
       "tests/telemetry/test_streams.py::test_r12_a_fork_copies_no_pending_event")),
    M("sharer-gets-backlog", "R13", "usecases/modulestore/bind.py",
      "    for b, bound in bound_stores:\n        figures = bound.head.figures\n",
      "    for b, bound in bound_stores:\n        figures = bound.head.figures\n"
      "        if not bound.source_store_id and figures.writes:\n"
      "            from ggmodules.wire.modulestore_events import snapshot_event\n"
      "            events.append(snapshot_event(plan.run_id, plan.agent_id, b.kind, bound.store_id,"
      " figures, None, 'backlog'))\n",
      ("tests/modulestore/test_copying.py::test_r13_a_new_sharer_gets_no_backlog_and_reports_only_its_own_writes",
       "tests/telemetry/test_streams.py::test_r13_a_sharer_gets_no_backlog")),
    M("board-forks", "R14", "core/modules/copying.py", "if kind == Kind.BOARD and action == BindAction.FORK:",
      "if False:", ("tests/modulestore/test_copying.py::test_r14_a_board_fork_yields_a_share_and_one_counter",)),
    M("window-shared", "R15", "core/modules/copying.py", "if kind == Kind.HISTORY and action == BindAction.SHARE:",
      "if False:", ("tests/modulestore/test_copying.py::test_r15_a_history_share_yields_an_independent_copy",)),
    M("fork-aliases-read-set", "R16", "storage/modulestore/binding.py",
      "            read_set_id = read_sets.create(conn, read_sets.load(conn, read_set_id))", "            pass",
      ("tests/modulestore/test_copying.py::test_r16_skills_catalogue_is_shared_and_the_read_set_follows_the_window",)),
    M("copy-not-restamped", "R17", "core/modules/copying.py", "return state.restamped(agent_id), figures",
      "return state, figures",
      ("tests/modulestore/test_copying.py::test_r17_fork_of_an_agent_applies_the_rules_per_kind",
       "tests/registry/test_fork.py::test_r17_the_copys_memories_are_restamped_and_its_writes_attributed_to_it")),
    M("loaded-code-stored", "R18", "core/modules/skills.py",
      "            return Applied(head, state.contents(head.directory, new_set), read_set=new_set)",
      "            grown = replace(head.figures, bytes=head.figures.bytes + len(state.catalogue[name].body))\n"
      "            return Applied(replace(head, figures=grown), state.contents(head.directory, new_set),"
      " read_set=new_set)",
      ("tests/modulestore/test_copying.py::test_r18_code_loaded_through_a_skill_is_never_stored_copied_or_transferred",)),
    M("transition-carries-all", "R19", "core/transfer/plan.py",
      "carry = set(edge.carry) | ({Kind.BOARD} if sides.board_enabled else set())",
      "carry = {k for k in Kind if sides.held(k) is not None}",
      ("tests/transfer/test_plan.py::test_r19_transition_outcome_per_kind",)),
    M("exec-carries-window-only", "R20", "core/transfer/plan.py",
      "carry = {k for k in Kind if sides.held(k) is not None and sides.enabled(k) is not None}",
      "carry = {Kind.HISTORY}", ("tests/transfer/test_plan.py::test_r20_exec_outcome_per_kind",)),
    M("strategy-mismatch-carried", "R21", "core/transfer/plan.py",
      "if held.strategy is not MemoryStrategy.UNSPECIFIED and held.strategy is not spec.strategy:", "if False:",
      ("tests/transfer/test_plan.py::test_r21_reinitialized_memories_note_says_why_in_a_sentence",
       "tests/modulestore/test_handover.py::test_r21_memories_strategy_mismatch_reinitializes_under_the_profiles_named_store")),
    M("board-edge-without-board", "R25", "core/registry/fsm.py",
      "if not board_enabled and (outgoing is not None or incoming is not None):", "if False:",
      ("tests/registry/test_fsm.py::test_r25_an_edge_may_carry_the_board_only_in_a_run_that_has_one",)),
    M("note-without-why", "R21", "core/transfer/notes.py",
      'f"memories were re-initialized: {self.predecessor} kept {a} and profile {self.profile} "',
      'f"memories were re-initialized" or f"{self.predecessor} kept {a} and profile {self.profile} "',
      ("tests/modulestore/test_handover.py::test_r21_memories_strategy_mismatch_reinitializes_under_the_profiles_named_store",
       "tests/transfer/test_plan.py::test_r21_reinitialized_memories_note_says_why_in_a_sentence")),
    M("caps-repointed-when-shared", "R22", "core/modules/handover.py",
      "return wanted if sole_holder else current", "return wanted",
      ("tests/modulestore/test_handover_rules.py::test_r22_a_store_with_other_holders_keeps_its_caps",
       "tests/transfer/test_rules_carried.py::test_r22_caps_are_re_pointed_only_for_the_sole_holder")),
    M("over-cap-adds-allowed", "R23", "core/modules/caps.py", "if limit and after > limit and after > before:",
      "if limit and after > limit and before < limit:",
      ("tests/modulestore/test_caps.py::test_r23_contents_over_a_tighter_cap_are_kept_and_the_next_addition_refused",)),
    M("fork-keeps-prompt", "R24", "core/modules/history.py",
      'return HistoryState("", False, dict(self.open_views), dict(self.pinned_blocks))',
      "return HistoryState(self.system_prompt, self.system_prompt_set, dict(self.open_views),"
      " dict(self.pinned_blocks))",
      ("tests/modulestore/test_copying.py::test_r24_a_forked_window_has_an_empty_system_prompt_slot",
       "tests/modulestore/test_handover_rules.py::test_r24_the_window_arrives_with_an_empty_slot_its_thread_and_its_turn")),
    M("edge-kind-not-held-launches", "R25", "core/registry/fsm.py",
      "if outgoing is not None and not outgoing.holds(kind):", "if False:",
      ("tests/registry/test_fsm.py::test_r25_a_malformed_fsm_reports_every_problem_at_once",)),
    M("missing-carry-not-a-defect", "R26", "core/transfer/plan.py",
      "    if missing:\n        raise PredecessorLacks", "    if False:\n        raise PredecessorLacks",
      ("tests/transfer/test_plan.py::test_r26_carrying_a_kind_the_predecessor_does_not_hold_is_a_defect",
       "tests/sdk/test_transfer.py::test_r26_a_carried_kind_the_predecessor_does_not_hold_ends_the_run_under_internal_error")),
    M("second-handover-applied", "R27", "usecases/modulestore/handover.py",
      "    if successor is not None:\n        raise already_handed_on(pred, successor)",
      "    if False:\n        raise already_handed_on(pred, successor)",
      ("tests/modulestore/test_handover.py::test_r27_racing_handovers_of_one_predecessor_apply_once",)),
    M("write-on-first-holders-stream", "R28", "usecases/modulestore/write.py",
      "written = write_event(run_id, agent_id, head.kind,",
      "written = write_event(run_id, (held.others() or [agent_id])[0], head.kind,",
      ("tests/modulestore/test_events.py::test_r28_r29_a_write_is_one_event_for_the_writer_and_a_snapshot_for_each_other_holder",
       "tests/telemetry/test_streams.py::test_r28_a_write_appears_once_on_its_writers_stream")),
    M("no-snapshots", "R29", "usecases/modulestore/write.py",
      "    others = held.others()  # every other active holder",
      "    others: list[str] = []",
      ("tests/modulestore/test_events.py::test_r28_r29_a_write_is_one_event_for_the_writer_and_a_snapshot_for_each_other_holder",
       "tests/telemetry/test_streams.py::test_r29_each_co_holder_gets_its_own_snapshot_on_its_own_stream")),
    M("memories-not-drained", "R30", "usecases/modulestore/handover.py",
      "        if h.store_id in kept:\n            continue",
      "        if h.store_id in kept or kind == Kind.MEMORIES:\n            continue",
      ("tests/modulestore/test_handover_events.py::test_r30_r31_r32_drains_then_the_successors_roster_then_its_restates",
       "tests/telemetry/test_transfer_streams.py::test_r30_r31_an_exec_drains_memories_on_the_planners_stream_and_restates_on_the_successors")),
    M("archive-not-restated", "R31", "usecases/modulestore/handover.py",
      "    for kind, got in sorted(received.items()):\n",
      "    for kind, got in sorted(received.items()):\n        if kind == Kind.ARCHIVE:\n            continue\n",
      ("tests/modulestore/test_handover_events.py::test_r31_a_restated_window_carries_no_thread_and_an_archive_no_contents",)),
    M("roster-enabled-rows-only", "R32", "wire/modulestore_events.py", "rows=[roster_row_pb(r) for r in rows],",
      "rows=[roster_row_pb(r) for r in rows if r.enabled],",
      ("tests/registry/test_rosters.py::test_r32_the_roster_is_stated_once_on_the_agents_stream_and_never_restated",
       "tests/telemetry/test_streams.py::test_r32_each_instances_roster_appears_once_and_first")),
    M("resume-skips-one", "R33", "core/telemetry/streams.py",
      "    check_retained(after_cursor, pruned_through)\n    return after_cursor",
      "    check_retained(after_cursor, pruned_through)\n    return after_cursor + 1",
      ("tests/telemetry/test_cursors.py::test_r33_resume_after_a_cursor_gives_every_later_event_once_in_order",)),
    M("ids-count-from-one", "R34", "storage/modulestore/minting.py", "n = int(conn.execute(stmt).scalar_one()) - 1",
      "n = int(conn.execute(stmt).scalar_one())",
      ("tests/modulestore/test_ids.py::test_r34_ids_count_from_zero_per_kind_per_run",
       "tests/registry/test_rosters.py::test_r34_store_ids_count_from_zero_per_kind_per_run")),
    M("no-memories-repoint", "R35", "core/transfer/plan.py",
      "            spec.scope is MemoryScope.AGENT\n            and held.origin in SHARED_ORIGINS",
      "            False\n            and held.origin in SHARED_ORIGINS",
      ("tests/transfer/test_plan.py::test_r35_shared_memories_re_point_to_the_successor_profiles_own_store",
       "tests/transfer/test_rules_runs.py::test_r35_store_ids_are_carried_and_a_shared_memories_binding_reports_the_profiles_store")),
    M("agent-rebound", "R36", "usecases/modulestore/bind.py",
      "    if unit.agent_exists(plan.run_id, plan.agent_id):\n        raise AlreadyExists(",
      "    if False:\n        raise AlreadyExists(",
      ("tests/modulestore/test_errors.py::test_r36_r48_rebinding_an_agent_is_refused_and_changes_nothing",
       "tests/modulestore/test_handover_events.py::test_r36_the_predecessors_roster_is_stated_once_and_never_restated")),
    M("writes-ignore-the-run", "R34", "storage/modulestore/unit.py",
      '_KEY = and_(_S.c.run_id == bindparam("run_id"), _S.c.store_id == bindparam("store_id"))',
      '_KEY = and_(_S.c.run_id == _S.c.run_id, _S.c.store_id == bindparam("store_id"))',
      ("tests/modulestore/test_errors.py::test_r34_r47_store_ids_repeat_across_runs_and_a_write_reaches_only_the_run_it_names",)),
    M("successor-keeps-id", "R36", "server/registry/successors.py",
      "agent_id = agent_id_for(request.profile, unit.next_agent_number(run.run_id, request.profile))",
      "agent_id = request.predecessor_agent_id",
      ("tests/registry/test_successors.py::test_r36_a_reserved_successor_gets_a_new_agent_id_and_stays_invisible",)),
    M("agent-files-sorted", "R37", "core/console/model.py", "files=AGENT_FILES,", "files=tuple(sorted(AGENT_FILES)),",
      ("tests/console/test_views.py::test_r37_instance_folder_lists_own_files_then_modules_in_kind_order_then_successors_and_subagents",)),
    M("handed-on-counts-as-shared", "R38", "core/console/reading.py", "return store.peak > 1",
      "return len(store.holders) > 1",
      ("tests/console/test_views.py::test_r38_a_store_held_at_once_shows_a_link_and_count_and_a_handed_on_one_is_shared_nowhere",)),
    M("history-one-turn", "R39", "core/console/model.py", "groupby(messages, key=lambda m: m.turn)",
      "groupby(messages, key=lambda m: 1)",
      ("tests/console/test_views.py::test_r39_the_history_file_carries_the_log_turn_by_turn_and_other_files_their_figures",)),
    M("no-co-holders", "R40", "core/console/reading.py",
      "co_holders=tuple(CoHolder(h.agent_id, module_path(store.kind)) for h in others),", "co_holders=(),",
      ("tests/console/test_views.py::test_r40_identity_strip_names_origin_access_lifetime_costs_co_holders_and_dropped",)),
    M("modules-view-always", "R41", "core/console/reading.py",
      "return any(r.enabled and r.kind != Kind.HISTORY for rows in rosters for r in rows)", "return True",
      ("tests/console/test_views.py::test_r41_the_modules_view_is_offered_only_when_a_profile_enables_more_than_the_window",
       "tests/console/test_console.py::test_r41_the_text_console_leaves_out_the_modules_view_of_a_run_without_one")),
    M("running-counts-holders", "R42", "core/console/model.py", "running=sum(r.running_holders for r in rows),",
      "running=sum(len(r.holders) for r in rows),",
      ("tests/console/test_views.py::test_r42_each_kind_overview_counts_stores_holders_running_sharing_cost_and_never_written",)),
    M("unmeasured-as-zero", "R43", "core/console/reading.py",
      "    if not costs or any(c.state is not CostState.MEASURED for c in costs):\n        return UNMEASURED",
      "    if not costs:\n        return UNMEASURED",
      ("tests/console/test_views.py::test_r43_withheld_figures_history_never_written_archive_cost_and_unmeasured_versus_zero",)),
    M("lifetime-newest-first", "R44", "core/console/model.py", "lifetime=reading.lifetime(f, store),",
      "lifetime=tuple(reversed(reading.lifetime(f, store))),",
      ("tests/console/test_views.py::test_r44_store_detail_has_identity_holders_lifetime_costs_and_contents",)),
    M("never-handed-on", "R45", "core/console/badges.py", "            return Badge.HANDED_ON",
      "            return Badge.PER_INSTANCE",
      ("tests/console/test_views.py::test_r45_profiles_badge_each_kind_by_how_its_stores_are_distributed",
       "tests/console/test_three_grains.py")),
    M("no-inherited-note", "R46", "core/console/badges.py", "        if not inherited:\n", "        if False:\n",
      ("tests/console/test_views.py::test_r46_declared_scope_against_observed_distribution_carries_a_note",)),
    M("first-holder-makes-run-global", "R45", "core/console/badges.py",
      "        if inst.parent_agent_id and _profile(folded, inst.parent_agent_id) != profile:", "        if True:",
      ("tests/console/test_console_defects.py::test_r45_a_store_an_exec_brought_in_and_a_spawn_spread_inside_the_profile_is_agent_scoped",)),
    M("finished-run-still-held", "R40", "core/console/fold.py",
      "        if body.status not in ENDED_RUN:\n            return", "        if True:\n            return",
      ("tests/console/test_console_defects.py::test_r40_a_finished_runs_holders_are_shown_dropped_on_every_grain",)),
    M("forks-unlisted", "R37", "core/console/fold.py",
      "_add_once(self.instance(body.parent_agent_id, event.cursor).forks, inst.agent_id)", "pass",
      ("tests/console/test_console_defects.py::test_r37_forks_are_listed_in_their_source_instances_folder",)),
    M("views-and-pins-unread", "R44", "core/console/fold.py",
      "store.open_views = {b.id: b.content for b in body.delta.open_views}", "pass",
      ("tests/console/test_console_defects.py::test_r44_history_contents_carry_open_views_and_pinned_blocks_and_a_close_takes_one_away",)),
    M("never-written-no-contents", "R44", "core/console/model.py",
      "    if store.contents is not None:\n        return store.contents", "    return store.contents",
      ("tests/console/test_console_defects.py::test_r44_a_never_written_store_shows_its_empty_contents",)),
    M("sections-for-unrostered", "R46", "core/console/model.py",
      "            if inst.roster is not None:\n                by_profile", "            if True:\n                by_profile",
      ("tests/console/test_views.py::test_r46_declared_scope_against_observed_distribution_carries_a_note",)),
    M("invalid-argument-internal", "R47", "runtime/errors.py", "Code.INVALID_ARGUMENT: code_pb2.INVALID_ARGUMENT,",
      "Code.INVALID_ARGUMENT: code_pb2.INTERNAL,",
      ("tests/modulestore/test_errors.py::test_r47_malformed_values_are_invalid_argument_never_internal",)),
    M("refusal-unbounded", "R47", "runtime/errors.py", "    if len(text) > QUOTE_CHARS:\n        text = _LONG_RUN",
      "    if True:\n        return text\n    if len(text) > QUOTE_CHARS:\n        text = _LONG_RUN",
      ("tests/bad_input/test_r47_refusal_size.py",
       "tests/bad_input/test_r47_r48_near_message_limit.py::test_r47_r48_a_request_near_the_message_limit_is_answered_or_refused_with_a_reason_changing_nothing[sqlite-registry:RegistryService.CreateRun:profiles.name]",
       "tests/bad_input/test_r47_r48_near_message_limit.py::test_r47_r48_a_request_near_the_message_limit_is_answered_or_refused_with_a_reason_changing_nothing[sqlite-modulestore:ModuleStoreInternalService.Handover:cause]",
       "tests/polyglot/test_typescript_client.py::test_r47_a_refusal_quoting_a_10000_character_profile_name_reaches_the_typescript_client_typed[sqlite]")),
    M("refusal-commits", "R48", "storage/modulestore/transaction.py",
      "                if pinned.in_transaction():\n                    pinned.rollback()",
      "                if pinned.in_transaction():\n                    pinned.commit()",
      ("tests/modulestore/test_errors.py::test_r48_a_refused_bind_binds_nothing",)),
    M("request-ids-forgotten", "R49", "storage/idempotency.py", "        if row is None:\n            return None",
      "        if True:\n            return None",
      ("tests/registry/test_idempotency.py::test_r49_a_retried_open_returns_the_same_instance_and_opens_one",)),
]


def run(mutant: Mutant) -> tuple[str, str, float]:
    path = ROOT / SRC / mutant.path
    original = path.read_text()
    if original.count(mutant.old) != 1:
        return "NOT APPLIED", f"{mutant.old!r} occurs {original.count(mutant.old)} times in {mutant.path}", 0.0
    started = time.monotonic()
    try:
        path.write_text(original.replace(mutant.old, mutant.new))
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "not postgres",
             *mutant.tests],
            cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
        )
    finally:
        path.write_text(original)
    took = time.monotonic() - started
    failed = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith(("FAILED", "ERROR"))]
    if proc.returncode == 1 and failed:
        return "killed", f"{proc.stdout.strip().splitlines()[-1]}: " + ", ".join(failed), took
    if proc.returncode == 0:
        return "SURVIVED", proc.stdout.strip().splitlines()[-1], took
    return f"ERROR (pytest exit {proc.returncode})", (proc.stdout + proc.stderr).strip()[-400:], took


def main(ids: list[str]) -> int:
    chosen = [m for m in MUTANTS if not ids or m.id in ids or m.rule in ids]
    survived = 0
    for m in chosen:
        verdict, detail, took = run(m)
        survived += verdict != "killed"
        print(f"{m.rule:<4} {m.id:<30} {verdict:<9} {took:5.1f}s  {detail}", flush=True)
    print(f"{len(chosen) - survived} of {len(chosen)} mutants killed")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
