"""The driver: runs deterministic steps, saving after each, until someone else must act.

``Engine`` owns one flow. Every public method runs under the flow's lock, changes the state
only after a step finished cleanly, and returns the spec to print. Feeds and answers are
validated before anything is written: a refused input leaves ``flow_state.json`` untouched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from flow.core import render
from flow.core.commands import Commands
from flow.core.errors import AnswerRejected, FeedRejected, OrchestratorError, WorkflowBug
from flow.core.feedfile import max_feed_bytes, read_feed
from flow.core.outcome import Ask, Done, Go, Human, Sleep, Task
from flow.core.state import FlowState, Question, TaskRecord
from flow.core.workflow import Workflow
from flow.core.atomic import write_atomic, write_new
from flow.core.jsonio import digest, dumps, loads
from flow.core.naming import is_inside, now_iso, safe_name
from flow.core.store import StateStore

if TYPE_CHECKING:
    from flow.core.proc import Result

MAX_STEPS = 1000
EXHAUSTED = "exhausted:"
CACHEABLE = {"need_agent", "waiting", "need_human", "done"}


class Ctx:
    """What a step sees: its typed data, task results, answers, and its flow folder."""

    def __init__(self, engine: Engine, data: BaseModel) -> None:
        self._engine = engine
        self._state = engine.state
        self.data = data
        self.flow_id = self._state.flow_id
        self.phase = self._state.phase
        self.visit = self._state.visit
        self.dir = engine.store.dir
        self.root = engine.store.root
        self.harness = engine.cmds.harness
        self.cmds = engine.cmds
        self.settings: Mapping[str, str] = engine.settings

    def _tasks(self, key: str) -> list[TaskRecord]:
        return [t for t in self._state.current_tasks() if t.key == key]

    def attempt(self, key: str) -> int:
        """How many times ``key`` was asked in this visit of this state."""
        return len(self._tasks(key))

    def result(self, key: str) -> Any:
        """The validated result of the latest attempt of ``key`` in this visit, or None."""
        tasks = [t for t in self._tasks(key) if t.status == "applied"]
        if not tasks:
            return None
        last = tasks[-1]
        if last.attempt != self.attempt(key):
            return None
        return self._engine.model_for(last.feed).model_validate(last.result)

    def results(self, prefix: str = "") -> dict[str, Any]:
        """Latest results of every key starting with ``prefix`` asked in this visit."""
        keys = dict.fromkeys(t.key for t in self._state.current_tasks()
                             if t.key.startswith(prefix))
        out = {k: self.result(k) for k in keys}
        return {k: v for k, v in out.items() if v is not None}

    def answer(self, key: str) -> str | None:
        return self._state.answers.get(key)

    def agent(self, role: str) -> str | None:
        return self._state.agents.get(role)

    def path(self, name: str) -> Path:
        """A file in the flow folder (``name`` may have sub-folders; it must stay inside)."""
        p = (self.dir / name).resolve()
        if not is_inside(self.dir, p):
            raise WorkflowBug(f"artifact name {name!r} leaves the flow folder",
                              "use a relative name without '..'")
        return p

    def write_json(self, name: str, obj: Any) -> Path:
        p = self.path(name)
        write_atomic(p, dumps(obj))
        return p

    def write_text(self, name: str, text: str, *, copy: bool = False) -> Path:
        """Write an artifact with its secrets masked (``flow.core.redact``); ``copy=True``
        keeps a copy of a user's file byte for byte (the flow puts it back later)."""
        p = self.path(name)
        if not copy:
            from flow.core.redact import redact

            text = redact(text)
        write_atomic(p, text.encode("utf-8"))
        return p

    def read_json(self, name: str) -> Any:
        return loads(self.path(name).read_bytes())

    def log(self, message: str) -> None:
        self._engine.store.log(f"[{self.phase}] {message}")

    def job(self, key: str, argv: Sequence[str], *, log_name: str, timeout: float,
            cwd: str | Path | None = None, env: Mapping[str, str] | None = None,
            stdin: str | None = None) -> Result:
        """Run ``argv`` as a background job the flow owns (``flow.core.jobs``) and return its
        result once it has finished; raises ``Pending`` (the engine answers ``waiting``) while
        it runs past this call's foreground budget. Memoized per visit and ``key``: the step
        runs again on the next call and gets the recorded result, so everything a step does
        before ``ctx.job`` must be safe to do again. ``env`` defaults to the settings; either
        way secrets are scrubbed. Jobs that can run side by side are started first with
        ``start_job`` (same arguments), then waited on with ``job``."""
        result = self._run_job(key, argv, log_name=log_name, timeout=timeout, cwd=cwd, env=env,
                               stdin=stdin, wait=True)
        assert result is not None
        return result

    def query(self, argv: Sequence[str], *, timeout: float = 60.0,
              cwd: str | Path | None = None, env: Mapping[str, str] | None = None) -> Any:
        """A short query whose stdout is data (git, an interpreter probe): ``proc.capture``
        in the foreground, returning its ``proc.Captured``. One that this call's foreground
        budget cut short (before its own ``timeout``) has no answer: it is run again as a
        background job the flow owns (``job``; the call answers ``waiting`` while it runs),
        and the step, re-run, gets that job's answer (stdout and stderr together). Its
        timeout is never taken for the answer. Memoized like ``job`` (per visit and query)."""
        import hashlib
        import json

        from flow.core import proc

        spelled = json.dumps([list(argv), None if cwd is None else str(cwd)])
        key = f"query-{hashlib.sha1(spelled.encode()).hexdigest()[:12]}"
        job_id = self._job_id(key)
        if job_id not in self._state.jobs:
            got = proc.capture(argv, cwd=cwd, env=self.settings if env is None else env,
                               timeout=timeout)
            if not got.budget_cut:
                return got
        done = self.job(key, argv, log_name=f"logs/{key}.log", timeout=timeout, cwd=cwd, env=env)
        return proc.Captured(done.code, done.output.encode("utf-8"), "",
                             timed_out=done.timed_out, argv=tuple(argv))

    def started_ahead(self, key: str) -> bool:
        """A job of ``key`` in this visit was started ahead of the engine (by the command
        line, ``flow.core.jobs.start_ahead``) and waits to be adopted by ``job``."""
        from flow.core.jobs import is_ahead

        return is_ahead(self.dir, self._job_id(key))

    def _job_id(self, key: str) -> str:
        from flow.core.jobs import job_id

        return job_id(self._state.phase, self._state.visit, key)

    def start_job(self, key: str, argv: Sequence[str], *, log_name: str, timeout: float,
                  cwd: str | Path | None = None, env: Mapping[str, str] | None = None,
                  stdin: str | None = None) -> None:
        """Start the job ``job`` would run (or find it started or finished), without waiting."""
        self._run_job(key, argv, log_name=log_name, timeout=timeout, cwd=cwd, env=env,
                      stdin=stdin, wait=False)

    def _run_job(self, key: str, argv: Sequence[str], *, log_name: str, timeout: float,
                 cwd: str | Path | None, env: Mapping[str, str] | None, stdin: str | None,
                 wait: bool) -> Result | None:
        from flow.core.jobs import run_job

        engine, state = self._engine, self._state
        return run_job(
            state.jobs, lambda event, fields: engine._save(event, **fields), self.dir,
            job_id=self._job_id(key), key=key,
            phase=state.phase, visit=state.visit, argv=argv, log_file=self.path(log_name),
            cwd=None if cwd is None else str(cwd),
            env=self.settings if env is None else env, timeout=timeout, stdin=stdin, wait=wait)


class Engine:
    """Drives one flow of one workflow. Callers hold the flow lock around every method."""

    def __init__(self, workflow: Workflow, store: StateStore, state: FlowState, cmds: Commands,
                 settings: Mapping[str, str] | None = None) -> None:
        self.wf = workflow
        self.store = store
        self.state = state
        self.cmds = cmds
        self.settings = settings or {}
        self._saved = dumps(state.model_dump(mode="json"))
        self._handed_out: int | None = None  # the wave this call emitted, if any

    # -- construction -----------------------------------------------------------------

    @classmethod
    def create(cls, workflow: Workflow, store: StateStore, data: BaseModel, cmds: Commands,
               settings: Mapping[str, str] | None = None) -> Engine:
        """A new flow at the workflow's initial state, saved before anything runs."""
        stamp = now_iso()
        state = FlowState(workflow=workflow.name, flow_id=store.flow_id, phase=workflow.initial,
                          visits={workflow.initial: 1}, harness=cmds.harness, created_at=stamp,
                          updated_at=stamp, data=data.model_dump(mode="json"))
        engine = cls(workflow, store, state, cmds, settings)
        engine._saved = b""
        engine._save("created", initial=workflow.initial)
        return engine

    def model_for(self, feed: str) -> type[BaseModel]:
        try:
            return self.wf.feeds[feed]
        except KeyError:
            raise WorkflowBug(f"workflow {self.wf.name!r} has no feed model {feed!r}",
                              "declare it in the workflow's feeds") from None

    # -- persistence --------------------------------------------------------------------

    def _save(self, event: str, **fields: Any) -> None:
        current = dumps(self.state.model_dump(mode="json"))
        if current == self._saved:
            return
        # The audit record is committed inside the state file (see the store's save).
        self._saved = self.store.save(self.state, event, phase=self.state.phase, **fields)

    # -- the driver ---------------------------------------------------------------------

    def advance(self) -> dict[str, Any]:
        """Run steps until one needs someone else; return the spec to print."""
        if self.state.harness != self.cmds.harness:
            self.state.harness = self.cmds.harness
            self._save("harness", harness=self.cmds.harness)
        for _ in range(MAX_STEPS):
            if self.state.result is not None or self.state.aborted:
                return self._cache(render.done_spec(self.state, self.store.root, self.store.dir,
                                                    self.cmds))
            pending = self.state.pending()
            if pending:
                args = (self.state, self.store.root, self.store.dir, self.cmds,
                        self.state.wave_extra)
                later = render.agent_spec(*args, fresh=False)
                self._cache(later)
                if self._handed_out == pending[0].wave:
                    return render.agent_spec(*args, fresh=True)
                return later
            q = self.state.question
            if q is not None and q.key not in self.state.answers:
                return self._cache(render.human_spec(self.state, self.store.root,
                                                     self.store.dir, self.cmds))
            spec = self._step()
            if spec is not None:
                return spec
        raise WorkflowBug(f"workflow {self.wf.name!r} ran {MAX_STEPS} steps without stopping",
                          "a step loops on itself; report it with the audit log")

    def _cache(self, spec: dict[str, Any]) -> dict[str, Any]:
        if spec["status"] in CACHEABLE and self._saved:
            self.store.cache_spec(self._saved, spec)
        return spec

    def _step(self) -> dict[str, Any] | None:
        state = self.state
        data = self.wf.data_model.model_validate(state.data)
        ctx = Ctx(self, data)
        step = self.wf.steps[state.phase]
        from flow.core.jobs import Pending
        from flow.core.proc import BudgetSpent

        try:
            outcome = step(ctx)
        except Pending as wait:
            # The step's data changes are dropped: it runs again from the start once the
            # job has finished, and gets the job's recorded result then.
            return render.job_spec(state, self.store.root, self.store.dir, self.cmds, wait.job)
        except BudgetSpent as cut:
            # A query the budget cut short has no answer to record: the step's data changes
            # are dropped and the step asks again in the next call.
            return render.budget_spec(state, self.store.root, self.store.dir, self.cmds, cut.what)
        new_data = data.model_dump(mode="json")
        _check_fields(state.phase, outcome)
        if isinstance(outcome, Go):
            dest = self.wf.fire(state.phase, outcome.trigger)
            state.history.append({"from": state.phase, "to": dest, "trigger": outcome.trigger,
                                  "at": now_iso()})
            state.data = new_data
            state.phase = dest
            state.visits[dest] = state.visits.get(dest, 0) + 1
            state.question = None
            state.wave_extra = {}
            self._save("transition", trigger=outcome.trigger, to=dest)
            return None
        if isinstance(outcome, Ask):
            state.data = new_data
            state.wave_extra = dict(outcome.extra)
            self._emit(outcome.tasks)
            return None
        if isinstance(outcome, Human):
            if outcome.key in state.answers:
                raise WorkflowBug(f"step {state.phase!r} asked {outcome.key!r} again after "
                                  f"it was answered", "use a new key for a new question")
            state.data = new_data
            state.question = Question(key=outcome.key, question=outcome.question,
                                      options=list(outcome.options.items()),
                                      extra=outcome.extra)
            self._save("question", key=outcome.key)
            return None
        if isinstance(outcome, Sleep):
            state.data = new_data
            self._save("sleep", reason=outcome.reason)
            return render.cron_spec(state, self.store.root, self.store.dir, self.cmds,
                                    outcome.reason, outcome.cron_interval,
                                    outcome.poll_seconds, self.wf.skill, outcome.extra)
        if isinstance(outcome, Done):
            state.data = new_data
            state.result = {**outcome.result, "next_steps": list(outcome.next_steps)}
            self._save("done", outcome=outcome.result.get("outcome"))
            return None
        raise WorkflowBug(f"step {state.phase!r} returned {outcome!r}",
                          "a step returns Go, Ask, Human, Sleep or Done")

    def _emit(self, tasks: list[Task]) -> None:
        state = self.state
        if not tasks:
            raise WorkflowBug(f"step {state.phase!r} asked for no tasks", "return Go instead")
        records: list[TaskRecord] = []
        wave = state.waves + 1
        for task in tasks:
            self.model_for(task.feed)
            attempt = len([t for t in state.current_tasks() if t.key == task.key]) + 1
            grant_key = f"{state.phase}:{state.visit}:{task.key}"
            allowed = task.max_attempts + state.grants.get(grant_key, 0)
            if attempt > allowed:
                # Out of attempts: escalate to a person, never carry on as if it worked.
                state.question = Question(
                    key=f"{EXHAUSTED}{grant_key}:{allowed}",
                    question=(f"Task {task.key!r} ({task.role}) in phase {state.phase!r} used "
                              f"all {allowed} attempts without an acceptable result. "
                              f"Grant more attempts, or abort the flow?"),
                    options=[("retry", f"grant {task.max_attempts} more attempts"),
                             ("abort", "end the flow now with outcome 'aborted'")],
                    extra={"task_key": task.key, "last_attempts": allowed,
                           "grant_key": grant_key},
                )
                self._save("exhausted", task=task.key, attempts=allowed)
                return
            task_id = safe_name(f"{state.phase}-v{state.visit}-{task.key}-a{attempt}")
            method = "run" if task.command is not None else task.method
            log_file = (str(self.store.logs_dir / f"{task_id}.log")
                        if method == "run" else None)
            records.append(TaskRecord(
                task_id=task_id, key=task.key, wave=wave, phase=state.phase, visit=state.visit,
                role=task.role, feed=task.feed, method=method, prompt=task.prompt,
                attempt=attempt, max_attempts=allowed,
                feed_file=str(self.store.feeds_dir / f"{task_id}.json"),
                follow_up=task.follow_up, command=task.command, cwd=task.cwd,
                log_file=log_file, mode=task.mode, timeout_ms=task.timeout_ms,
                inline_for_codex=task.inline_for_codex, extra=task.extra))
        ids = [r.task_id for r in records]
        if len(set(ids)) != len(ids):
            raise WorkflowBug(f"step {state.phase!r} asked for duplicate keys {ids}",
                              "give each task of a wave its own key")
        self.store.feeds_dir.mkdir(parents=True, exist_ok=True)
        if any(r.log_file for r in records):
            self.store.logs_dir.mkdir(parents=True, exist_ok=True)
        state.waves = wave
        state.tasks.extend(records)
        self._handed_out = wave
        self._save("emitted", tasks=ids)

    # -- inputs from outside --------------------------------------------------------------

    def feed(self, role: str, feed_path: str) -> dict[str, Any]:
        """Validate and apply one result; refuse anything stale, foreign or malformed.

        The file is read with a bound (``flow.core.feedfile``); the content is validated strictly
        (JSON types as they are: ``1`` is no boolean, ``"3"`` no number); a ``task_id`` in it
        must name the task fed. Every refusal is audited; none touches the state.
        """
        try:
            path = Path(feed_path).expanduser().resolve()
        except (OSError, RuntimeError) as exc:  # a symlink loop (RuntimeError before 3.13)
            raise self._refuse(FeedRejected(
                f"feed file {feed_path!r} cannot be resolved: {exc}",
                "write the result JSON to the task's feed_file (a plain file, not a link loop)",
                code="feed_missing", task_id=None)) from None
        try:
            content = read_feed(path, max_feed_bytes(self.settings))
        except FeedRejected as err:
            owner = [t.task_id for t in self.state.tasks if Path(t.feed_file) == path]
            err.details.setdefault("task_id", owner[0] if owner else None)
            raise self._refuse(err) from None
        task = self._match(path, content)
        payload = _payload(content)
        if task.status == "applied":
            if task.result_digest == digest(payload):
                self.store.audit("feed_duplicate", task_id=task.task_id)
                return self._unchanged()
            raise self._refuse(FeedRejected(
                f"task {task.task_id!r} was already applied with different content",
                "a result cannot be changed once applied; if this is the answer to a newer "
                "task, write it to that task's feed_file (run --resume to see it)",
                code="already_applied", task_id=task.task_id))
        if role not in {task.role, task.feed}:
            raise self._refuse(FeedRejected(
                f"feed role {role!r} does not match task {task.task_id!r}, which expects "
                f"{task.role!r}", f"run: {self.cmds.feed(task.role, task.feed_file)}",
                code="wrong_role", task_id=task.task_id))
        model = self.model_for(task.feed)
        try:
            # JSON mode and strict: the types the published schema states, no coercion.
            result = model.model_validate_json(dumps(payload, indent=False), strict=True,
                                               context={"workspace": str(self.store.root),
                                                        "flow_dir": str(self.store.dir)})
        except ValidationError as exc:
            errors = [{"field": ".".join(str(p) for p in e["loc"]) or "<root>", "problem": e["msg"]}
                      for e in exc.errors()]
            raise self._refuse(FeedRejected(
                f"feed for task {task.task_id!r} does not match {self.wf.name}.{task.feed}: "
                + "; ".join(f"{e['field']}: {e['problem']}" for e in errors[:5]),
                f"fix the fields and feed again; the expected schema: "
                f"{self.cmds.schema(f'{self.wf.name}.{task.feed}')}",
                code="invalid_feed", task_id=task.task_id, field_errors=errors[:50])) from None
        if path != Path(task.feed_file):
            # Fed by task_id from a file of its own (the MCP server's, another harness's):
            # the task's feed_file keeps the trail of a file feed only where nothing is there
            # yet. A file there is the harness's own result, written before it ran its
            # feed_command: it is never replaced, so that feed is refused (already_applied)
            # instead of reading this result back as its own and passing as a re-feed.
            write_new(Path(task.feed_file), dumps(payload))
        task.status = "applied"
        task.result = result.model_dump(mode="json")
        task.result_digest = digest(payload)
        agent_id = getattr(result, "agent_id", None)
        if agent_id:
            self.state.agents[task.role] = agent_id
        self._save("fed", task_id=task.task_id, role=task.role)
        return self.advance()

    def _unchanged(self) -> dict[str, Any]:
        """The current spec, no step run: a re-feed of an applied result changes nothing, so
        a background job it waits on is not polled (that is ``--resume``'s work). The spec
        cached from exactly the state on disk is it, or the ``waiting`` spec of a job of this
        visit with no recorded result; without either, ``advance`` renders it."""
        state = self.state
        if not state.pending():
            spec = self.store.cached_spec()
            if spec is not None and spec.get("harness") == self.cmds.harness:
                return spec
            running = [j for j in state.jobs.values() if j.result is None
                       and (j.phase, j.visit) == (state.phase, state.visit)]
            if running and state.result is None and not state.aborted:
                return render.job_spec(state, self.store.root, self.store.dir, self.cmds,
                                       running[0])
        return self.advance()

    def _match(self, path: Path, content: dict[str, Any]) -> TaskRecord:
        """The task this feed answers: by its feed_file, else by the ``task_id`` it names.

        A ``task_id`` in the content, when present, must be a string naming that very task:
        an integer, an unknown id or another task's id is refused.
        """
        by_file = [t for t in self.state.tasks if Path(t.feed_file) == path]
        named = content.get("task_id")
        if "task_id" in content and not (isinstance(named, str) and named):
            raise self._refuse(FeedRejected(
                f"task_id {named!r} in feed file {str(path)!r} is not a task id (a string)",
                "remove task_id, or set it to the task_id of the task you feed",
                code="bad_task_id", task_id=by_file[0].task_id if by_file else None))
        by_id = [t for t in self.state.tasks if t.task_id == named] if named else []
        if by_file and named is not None and (not by_id or by_file[0] is not by_id[0]):
            raise self._refuse(FeedRejected(
                f"feed file {str(path)!r} belongs to task {by_file[0].task_id!r} but names "
                f"task_id {named!r}", "remove task_id or write to the right feed_file",
                code="foreign_feed", task_id=by_file[0].task_id))
        found = by_file or by_id
        if not found:
            pending = [t.feed_file for t in self.state.pending()]
            raise self._refuse(FeedRejected(
                f"feed file {str(path)!r} belongs to no task of flow {self.state.flow_id!r}",
                "write the result to the feed_file of a pending task: "
                + (", ".join(pending) if pending else "none is pending; run --resume"),
                code="stale_feed", pending_feed_files=pending))
        return found[0]

    def _refuse(self, err: FeedRejected) -> FeedRejected:
        """Audit a refused feed (best effort: a full disk or a store gone away must not hide
        the refusal)."""
        try:
            self.store.audit("feed_refused", code=err.code, message=err.message[:500],
                             task_id=err.details.get("task_id"))
        except OSError as exc:
            err.details["audited"] = f"no: {exc.strerror or exc}"
        except OrchestratorError as exc:  # the PostgreSQL store could not be reached
            err.details["audited"] = f"no: {exc.message}"
        return err

    def answer(self, value: str) -> dict[str, Any]:
        """Record a person's answer to the open question."""
        q = self.state.question
        if q is None or q.key in self.state.answers:
            raise AnswerRejected(f"flow {self.state.flow_id!r} has no open question",
                                 "run --resume to see what the flow needs now")
        if value not in q.values():
            raise AnswerRejected(f"{value!r} is not an option of the open question",
                                 f"answer one of: {', '.join(q.values())}",
                                 options=q.values())
        self.state.answers[q.key] = value
        self.state.question = None
        if q.key.startswith(EXHAUSTED):
            grant_key = str(q.extra["grant_key"])
            if value == "abort":
                self.state.aborted = True
                self.state.result = {"outcome": "aborted",
                                     "reason": q.question, "next_steps": [
                                         "The flow was aborted by a person; start it anew "
                                         "with --restart if needed."]}
            else:
                extra = int(q.extra.get("last_attempts", 3))
                self.state.grants[grant_key] = self.state.grants.get(grant_key, 0) + extra
        self._save("answered", key=q.key, value=value)
        return self.advance()


def _check_fields(phase: str, outcome: object) -> None:
    """Fields a step adds to the printed object must not overwrite the envelope's."""
    for name in ("extra", "result"):
        fields = getattr(outcome, name, None) or {}
        clash = sorted(render.RESERVED & set(fields))
        if clash:
            raise WorkflowBug(f"step {phase!r} sets reserved field(s) {clash} in its {name}",
                              "the envelope sets these itself; rename the step's fields")


def _payload(content: dict[str, Any]) -> dict[str, Any]:
    """The result without the envelope field ``task_id``."""
    return {k: v for k, v in content.items() if k != "task_id"}

