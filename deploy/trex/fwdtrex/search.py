"""NDR and PDR by FD.io CSIT's MLRsearch (the MLRsearch package).

NDR is the highest load with no loss, PDR the highest with at most 0.5 %
(CSIT's two goals). Both are searched in one MultipleLossRatioSearch run:
every trial informs both goals. The measurer is any
MLRsearch.AbstractMeasurer; loads are aggregate packets per second over the
ports the profile uses (the TRex measurer splits them).

What is returned for each goal: the relevant lower bound (the rate), the
relevant upper bound, MLRsearch's conditional throughput, and the trials
measured at either bound, which are what decided it. Two irregular ends are
reported as such, never as a number MLRsearch did not find: `lost_at_min`
(even the minimum rate was an upper bound: the rate reported is the minimum,
the true value is below it) and `clean_at_max` (no loss at the maximum rate:
the true value is at or above it).
"""

from dataclasses import asdict, dataclass

from MLRsearch import AbstractMeasurer, Config, MultipleLossRatioSearch, SearchGoal

NDR_LOSS = 0.0
PDR_LOSS = 0.005


@dataclass
class SearchSettings:
    min_rate: float = 10_000.0
    max_rate: float = 10_000_000.0
    # Trials start this short, end this long (MLRsearch's preceding targets
    # use the short ones to find the interval cheaply).
    initial_duration: float = 1.0
    final_duration: float = 10.0
    # Seconds of trials at a load before it may be declared a bound.
    duration_sum: float = 10.0
    # Relative width of the final interval (0.005: 0.5 %).
    width: float = 0.005
    # Share of the duration sum that may be bad trials at a lower bound.
    exceed_ratio: float = 0.5
    ndr_loss: float = NDR_LOSS
    pdr_loss: float = PDR_LOSS
    warmup: float = 0.0
    max_search_time: float = 3600.0

    def validate(self):
        """Raises ValueError naming the setting that is wrong (MLRsearch's
        own checks run too when the config is built)."""
        if not 0 < self.min_rate < self.max_rate:
            raise ValueError(
                f"rates: need 0 < min ({self.min_rate:g}) < max ({self.max_rate:g})"
            )
        if not 0 < self.initial_duration <= self.final_duration:
            raise ValueError(
                f"durations: need 0 < initial ({self.initial_duration:g}) "
                f"<= final ({self.final_duration:g})"
            )
        if self.duration_sum < self.final_duration:
            raise ValueError(
                f"duration sum ({self.duration_sum:g}) is shorter than one final trial "
                f"({self.final_duration:g})"
            )
        if not 0 < self.width < 1:
            raise ValueError(f"width {self.width:g}: must be in (0, 1)")
        if not 0 <= self.exceed_ratio < 1:
            raise ValueError(f"exceed ratio {self.exceed_ratio:g}: must be in [0, 1)")
        if not 0 <= self.ndr_loss < self.pdr_loss < 1:
            raise ValueError(
                f"loss ratios: need 0 <= ndr ({self.ndr_loss:g}) < pdr ({self.pdr_loss:g}) < 1"
            )
        self.goals()

    def goals(self):
        def goal(loss):
            return SearchGoal(
                loss_ratio=loss,
                exceed_ratio=self.exceed_ratio,
                relative_width=self.width,
                initial_trial_duration=self.initial_duration,
                final_trial_duration=self.final_duration,
                duration_sum=self.duration_sum,
                # A device losing at the minimum rate is a result, not a crash.
                fail_fast=False,
            )

        return {"ndr": goal(self.ndr_loss), "pdr": goal(self.pdr_loss)}

    def config(self):
        c = Config()
        c.goals = list(self.goals().values())
        c.min_load = self.min_rate
        c.max_load = self.max_rate
        c.warmup_duration = self.warmup
        c.search_duration_max = self.max_search_time
        return c

    def as_dict(self):
        return asdict(self)


class RecordingMeasurer(AbstractMeasurer):
    """Wraps a measurer and keeps every trial (its MeasurementResult plus
    whatever the inner measurer says about it in `last_details`, e.g. the
    appliance's drops by reason)."""

    def __init__(self, inner, on_trial=None):
        self.inner = inner
        self.trials = []
        self.on_trial = on_trial

    def measure(self, intended_duration, intended_load):
        r = self.inner.measure(intended_duration, intended_load)
        t = {
            "n": len(self.trials) + 1,
            "rate": float(intended_load),
            "duration": float(intended_duration),
            "offered": r.offered_count,
            "forwarded": r.forwarding_count,
            "lost": r.loss_count,
            "loss_ratio": r.loss_ratio,
        }
        details = getattr(self.inner, "last_details", None)
        if details:
            t.update(details)
        self.trials.append(t)
        if self.on_trial:
            self.on_trial(t)
        return r


def _same_load(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)


def _goal_report(name, goal, result, settings, trials):
    lower = result.relevant_lower_bound
    upper = result.relevant_upper_bound
    lo = float(lower) if lower is not None else None
    hi = float(upper) if upper is not None else None
    ct = result.conditional_throughput
    rep = {
        "goal": name,
        "loss_ratio": goal.loss_ratio,
        "lower_bound": lo,
        "upper_bound": hi,
        "conditional_throughput": float(ct) if ct is not None else None,
        "limit": None,
    }
    if lo is None:
        # Even the minimum rate lost more than the goal allows.
        rep["rate"] = settings.min_rate
        rep["limit"] = "lost_at_min"
    else:
        rep["rate"] = lo
        if hi is None:
            rep["limit"] = "clean_at_max"
    rep["relative_width"] = (hi - lo) / hi if lo is not None and hi is not None else None
    rep["deciding_trials"] = [
        t["n"]
        for t in trials
        if (lo is not None and _same_load(t["rate"], lo))
        or (hi is not None and _same_load(t["rate"], hi))
    ]
    return rep


def search_ndr_pdr(measurer, settings, on_trial=None, debug=None):
    """Runs MLRsearch for NDR and PDR with `measurer`. Returns
    {"ndr": report, "pdr": report, "trials": [trial...], "settings": {...}}."""
    settings.validate()
    rec = RecordingMeasurer(measurer, on_trial)
    goals = settings.goals()
    results = MultipleLossRatioSearch(config=settings.config()).search(
        measurer=rec, debug=debug or (lambda _msg: None)
    )
    out = {"settings": settings.as_dict(), "trials": rec.trials}
    for name, goal in goals.items():
        out[name] = _goal_report(name, goal, results[goal], settings, rec.trials)
    return out


def describe(report):
    """One line for a goal's report."""
    rate = report["rate"]
    if report["limit"] == "lost_at_min":
        return f"{report['goal'].upper()}: below the minimum rate {rate:,.0f} pps (it lost there)"
    if report["limit"] == "clean_at_max":
        return f"{report['goal'].upper()}: at least the maximum rate {rate:,.0f} pps (no loss there)"
    return (
        f"{report['goal'].upper()}: {rate:,.0f} pps "
        f"(upper bound {report['upper_bound']:,.0f}, width {report['relative_width']:.4f})"
    )


def plan(settings):
    """The targets MLRsearch will pursue, as it derives them from the goals
    (the final one per goal and its coarser, shorter preceding targets):
    what a dry run shows. Built with MLRsearch's own classes."""
    from MLRsearch.load_rounding import LoadRounding
    from MLRsearch.search_goal_tuple import SearchGoalTuple
    from MLRsearch.target_scaling import TargetScaling

    settings.validate()
    goals = settings.goals()
    rounding = LoadRounding(
        min_load=settings.min_rate,
        max_load=settings.max_rate,
        float_goals=[g.relative_width for g in goals.values()],
    )
    scaling = TargetScaling(goals=SearchGoalTuple(goals.values()), rounding=rounding)
    names = {id(scaling.goal_to_final_target[g]): n for n, g in goals.items()}
    out = []
    for t in scaling.targets:
        final = t
        while id(final) not in names:
            # Follow the chain down to the final target of its goal.
            final = next(x for x in scaling.targets if x.preceding is final)
        out.append(
            {
                "goal": names[id(final)],
                "final": t is final,
                "loss_ratio": t.loss_ratio,
                "trial_duration": t.trial_duration,
                "duration_sum": t.duration_sum,
                "relative_width": float(t.discrete_width),
            }
        )
    return out
