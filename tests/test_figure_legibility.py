"""Every figure kind of repdist.figures, drawn once on tiny inputs, can be read at a glance: no
legend over a plotted point, a label on every colour bar, tick values on every axis that shows
data (unless a shared axis shows them), "±" rather than "+-", and markers that do not hide
each other. `legibility_problems` is the check, for any figure."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.axis import Axis
from matplotlib.collections import PathCollection
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from repdist.figures.style import plt
from test_figures import synthetic_pairs

# --- the check ---------------------------------------------------------------------------------


def data_points(ax: Axes) -> np.ndarray:
    """Every plotted point of the axes' lines and collections (a scatter's markers, a band's or
    a bar's vertices) in display coordinates, those clipped away by the axes left out."""
    parts = [line.get_transform().transform(line.get_xydata())
             for line in ax.get_lines() if line.get_visible() and len(line.get_xydata())]
    for collection in ax.collections:
        if not collection.get_visible():
            continue
        if isinstance(collection, PathCollection):
            parts.append(scatter_points(collection))
        else:
            parts += [collection.get_transform().transform(path.vertices)
                      for path in collection.get_paths() if len(path.vertices)]
    points = np.concatenate(parts) if parts else np.zeros((0, 2))
    box = ax.bbox
    inside = ((points[:, 0] >= box.x0) & (points[:, 0] <= box.x1)
              & (points[:, 1] >= box.y0) & (points[:, 1] <= box.y1))
    return points[np.isfinite(points).all(axis=1) & inside]


def covered(box: Bbox, points: np.ndarray) -> int:
    """How many of the points lie inside the box."""
    return int(((points[:, 0] > box.x0) & (points[:, 0] < box.x1)
                & (points[:, 1] > box.y0) & (points[:, 1] < box.y1)).sum())


def legend_problems(fig: Figure) -> list[str]:
    """Each legend (of an axes or the figure) that covers a plotted point of any axes."""
    renderer = fig.canvas.get_renderer()
    legends = [*(ax.get_legend() for ax in fig.axes if ax.get_legend()), *fig.legends]
    problems = []
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            n = covered(box, data_points(ax))
            if n:
                names = [t.get_text() for t in legend.get_texts()][:2]
                problems.append(f"legend {names} covers {n} point(s) of '{ax.get_title()}'")
    return problems


def is_colour_bar(ax: Axes) -> bool:
    return ax.get_label() == "<colorbar>"


def has_data(ax: Axes) -> bool:
    return (ax.axison and not is_colour_bar(ax)
            and bool(ax.get_lines() or ax.collections or ax.get_images()))


def tick_texts(axis: Axis) -> list[str]:
    """The text of the axis' visible tick labels, major and minor."""
    return [t.get_text() for t in axis.get_ticklabels(which="both")
            if t.get_visible() and t.get_text().strip()]


def shown_elsewhere(ax: Axes, name: str) -> bool:
    """Whether an axes sharing this one's x (or y) shows its tick values (label_outer)."""
    shared = ax.get_shared_x_axes() if name == "x" else ax.get_shared_y_axes()
    return any(tick_texts(getattr(other, f"{name}axis"))
               for other in shared.get_siblings(ax) if other is not ax)


def is_picture(ax: Axes, axis: Axis) -> bool:
    """An image alone, its ticks taken away on purpose (a photograph, not a heatmap)."""
    return not ax.get_lines() and not ax.collections and not len(axis.get_majorticklocs())


def tick_problems(fig: Figure) -> list[str]:
    """Each axis of an axes with data whose ticks have no values to read."""
    problems = []
    for ax in filter(has_data, fig.axes):
        for name in ("x", "y"):
            axis = getattr(ax, f"{name}axis")
            if tick_texts(axis) or shown_elsewhere(ax, name) or is_picture(ax, axis):
                continue
            problems.append(f"'{ax.get_title()}': no {name} tick values")
    return problems


def scatter_points(collection: PathCollection) -> np.ndarray:
    offsets = np.ma.filled(np.ma.asarray(collection.get_offsets(), float), np.nan)
    return collection.get_offset_transform().transform(offsets)


def alike(below: PathCollection, above: PathCollection) -> bool:
    """Whether `above`'s markers hide `below`'s: the same shape and size, and opaque."""
    faces = above.get_facecolors()
    return (len(faces) > 0 and bool((faces[:, 3] > 0.9).all())
            # exact: one marker shape's vertices, the same table in matplotlib for both
            and np.array_equal(below.get_paths()[0].vertices, above.get_paths()[0].vertices)
            and np.allclose(below.get_sizes(), above.get_sizes()[0]))


def marker_problems(fig: Figure) -> list[str]:
    """Scatters of one axes drawn alike whose markers fall on each other (within a pixel):
    the one drawn first is hidden where they meet."""
    problems = []
    for ax in fig.axes:
        drawn = sorted((c for c in ax.collections if isinstance(c, PathCollection)
                        and len(c.get_offsets())), key=lambda c: c.get_zorder())
        for i, below in enumerate(drawn):
            for above in (a for a in drawn[i + 1:] if alike(below, a)):
                gaps = np.linalg.norm(scatter_points(below)[:, None] - scatter_points(above),
                                      axis=-1)
                if (gaps < 1).any():
                    problems.append(f"'{ax.get_title()}': {below.get_label()!r} hidden under "
                                    f"{above.get_label()!r}")
    return problems


def legibility_problems(fig: Figure) -> list[str]:
    """What keeps `fig` from being read at a glance, one line each: a legend over a plotted
    point, a colour bar without a label, an axis with data but no tick values, "+-" for "±",
    markers hidden under others drawn alike."""
    fig.draw_without_rendering()
    bars = [f"colour bar beside '{ax.get_title()}' has no label" for ax in fig.axes
            if is_colour_bar(ax) and not (ax.get_ylabel() or ax.get_xlabel())]
    plus_minus = [f"'+-' in {t.get_text()!r}" for t in fig.findobj(Text) if "+-" in t.get_text()]
    return [*legend_problems(fig), *bars, *tick_problems(fig), *plus_minus,
            *marker_problems(fig)]


def test_the_check_finds_each_problem_on_a_figure_made_to_have_it():
    """A legend over points, hidden markers, an unlabelled colour bar, an axis without tick
    values and "+-": each named; a shared y axis whose values show beside it is no problem."""
    fig = plt.figure(figsize=(9, 3))
    left = fig.add_subplot(131)
    right = fig.add_subplot(132, sharey=left)
    right.tick_params(labelleft=False)  # as subplots(sharey=True) hides them
    x = np.linspace(0, 1, 50)
    for ax in (left, right):
        ax.plot(x, x, label="line")
    left.legend(loc="center")
    left.scatter([0.5], [0.5], label="below")
    left.scatter([0.5], [0.5], label="above")
    right.set_xticklabels([])
    right.set_title("+- 1 sd")
    heat = fig.add_subplot(133)
    fig.colorbar(heat.imshow(np.eye(3)), ax=heat)
    problems = "\n".join(legibility_problems(fig))
    assert "legend ['line'] covers" in problems and "'below' hidden under 'above'" in problems
    assert "colour bar beside '' has no label" in problems
    assert "'+- 1 sd': no x tick values" in problems and "no y tick values" not in problems
    assert "'+-' in '+- 1 sd'" in problems and len(legibility_problems(fig)) == 5


def test_a_legend_beside_or_below_the_axes_is_clear_of_it_and_its_x_axis():
    """Outside the axes, and (below) under the tick values and a two-line x label."""
    from repdist.figures.style import legend_below, legend_beside

    for place in (legend_beside, legend_below):
        fig, ax = plt.subplots()
        x = np.linspace(0, 1, 200)
        ax.plot(x, np.sin(8 * x), label="a")
        ax.set_xlabel("x\non two lines")
        legend = place(ax)
        fig.tight_layout()
        assert legibility_problems(fig) == []
        renderer = fig.canvas.get_renderer()
        box = legend.get_window_extent(renderer)
        assert not box.overlaps(ax.bbox) and not box.overlaps(ax.xaxis.get_tightbbox(renderer))


# --- each figure kind on tiny inputs -------------------------------------------------------------

RNG_SEED = 0


def width_figures() -> list[Figure]:
    from repdist.experiments.synthetic.widths import measures_by_width, width_summary
    from repdist.figures.synthetic import MEASURE_PANELS, measures_vs_width_figure, width_figure

    pairs = synthetic_pairs()
    summary = width_summary(pairs, threshold=0.9, min_seeds=5)
    baseline = pd.DataFrame([{"K": k, "width": w, "d_llv_untrained_mean": 0.3,
                              "d_llv_tau_mean": 0.25, "d_fg_untrained_mean": 0.2,
                              "d_fg_tau_mean": 0.15} for k in (4, 6) for w in (16, 32)])
    pairs["mcca_f_tau"] = 0.2
    columns = [c for c, _ in MEASURE_PANELS if c in pairs.columns]
    by_width = measures_by_width(pairs, [*columns, "mcca_f_tau"])
    return [width_figure({4: summary, 6: summary}, 0.9, 5, "t", baseline),
            measures_vs_width_figure(by_width, 4, len(pairs), 0)]


def synthetic_figures() -> list[Figure]:
    from repdist.data.radial import make_radial
    from repdist.experiments.synthetic.alignment import alignment_table, alignment_trends
    from repdist.figures.synthetic import alignment_figure, data_figure
    from test_synthetic_alignment import grid

    table = alignment_table(grid())
    trends = alignment_trends(table)
    return [data_figure(make_radial(200, 4, 0)),
            alignment_figure(table, trends["rho_width_by_k"], trends["rho_accuracy"])]


def cifar_figures() -> list[Figure]:
    from repdist.figures.cifar import loss_diff_figure, reps_figure, seed_comparison

    rng = np.random.default_rng(RNG_SEED)
    f = rng.normal(size=(60, 2))
    a = pd.DataFrame({"f_0": f[:, 0], "f_1": f[:, 1], "pred": np.arange(60) % 10})
    names = [f"c{i}" for i in range(10)]
    pairs = pd.DataFrame({"mcca_f_test": [0.4, 0.6, 0.8], "test_loss_diff": [0.1, 0.2, 0.3]})
    return [reps_figure(f, a["pred"].to_numpy(), rng.normal(size=(10, 2)), names, 0, True),
            seed_comparison(a, a.assign(f_0=-a["f_0"]), 0.9, names, ("seed 0", "seed 1"), True),
            loss_diff_figure({2: pairs, 3: pairs}, standin=False)]


def logit_distance_summary() -> pd.DataFrame:
    """The inverse-variance summary's rows: every loss, split, metric and epoch."""
    from repdist.figures.logit_distance import ROWS

    rows = [{"loss": loss, "split": split, "metric": metric, "epoch": epoch,
             "mean": 0.5 + 0.1 * i + 0.01 * epoch, "var": 1e-4}
            for i, loss in enumerate(("kl", "l1", "l2")) for split in ("test", "train")
            for metric, _, _ in ROWS for epoch in range(1, 6)]
    return pd.DataFrame(rows)


def logit_distance_final() -> pd.DataFrame:
    """Students of every loss, the KL and L2 ones in the same places (one hides the other
    unless their markers differ)."""
    rng = np.random.default_rng(RNG_SEED)
    d2 = rng.uniform(0.01, 1.0, size=6)
    rows = [{"loss": loss, "f1_right": d, "f1_left": 0.5 * d, "kl_bound": 3 * d,
             "f1_holds": True, "kl_bound_looseness": 3.0}
            for loss in ("kl", "l1", "l2") for d in (d2 if loss != "l1" else d2 * 2)]
    return pd.DataFrame(rows)


def logit_distance_figures() -> list[Figure]:
    from repdist.figures.logit_distance import bound_figure, metrics_figure

    return [metrics_figure(logit_distance_summary(), "t"),
            bound_figure(logit_distance_final(), "t")]


def bound_figures() -> list[Figure]:
    from repdist.figures.bound import bound_figure
    from repdist.figures.models import group_figures

    rng = np.random.default_rng(RNG_SEED)
    d_llv = rng.uniform(0.0, 0.3, size=20)
    table = pd.DataFrame({"d_llv": d_llv, "d_fg": d_llv * rng.uniform(0.5, 5, size=20)})
    pairs = pd.DataFrame({"model_a": ["a", "a", "b"], "model_b": ["b", "c", "c"],
                          "d_llv": [0.01, 0.02, 0.03], "d_fg": [0.02, 0.01, 0.2],
                          "mcca_f": [0.9, 0.8, 0.7]})
    meta = {"M": 2, "models": [{"name": n} for n in "abc"]}
    return [bound_figure(table, 2, "t"), *group_figures(pairs, meta, "g")]


def dynamics_figures() -> list[Figure]:
    from repdist.figures.dynamics import dynamics_figure

    steps = np.repeat(np.arange(0, 100, 10), 3)
    run = pd.DataFrame({"step": steps, "mcca_f": 0.5 + steps / 300, "d_llv": 1 - steps / 200,
                        "d_fg": 0.5 - steps / 300, "mcca_f_tau": 0.1, "d_llv_tau": 0.9,
                        "d_fg_tau": 0.45})
    return [dynamics_figure(run, "t", mark_step=50, mark_label="the paper's step"),
            dynamics_figure({"plain": run, "shifted": run.assign(mcca_f=run["mcca_f"] - 0.1)},
                            "t")]


def distillation_figures() -> list[Figure]:
    from repdist.figures.distillation import distillation_figure

    rows = [{"loss": loss, "K": k, "width": 16, "kl": 0.01 * (i + 1) * (j + 1),
             "mcca_f": 0.9 - 0.1 * i, "d_llv": 0.1 * (i + 1), "probe_angle_student": 0.5,
             "probe_angle_teacher": 0.8}
            for i, loss in enumerate(("kl", "logit_l2", "labels")) for k in (4, 6)
            for j in range(3)]
    return [distillation_figure(pd.DataFrame(rows), "t")]


def linear_fit_figures() -> list[Figure]:
    from repdist.figures.roeder_linear_fit import linear_fit_figure
    from repdist.measures.probe import linear_fit

    rng = np.random.default_rng(RNG_SEED)
    f = rng.normal(size=(80, 2))
    return [linear_fit_figure([linear_fit("a", f, f @ rng.normal(size=(2, 2)))] * 2, "t")]


def lm_figures() -> list[Figure]:
    from repdist.figures.lm import layers_figure, seed_pairs_figure

    pairs = pd.DataFrame({"seed_a": [0, 0, 1], "seed_b": [1, 2, 2], "kl": [0.1, 0.2, 0.15],
                          "d_llv": [0.01, 0.03, 0.02], "mcca_f": [0.9, 0.8, 0.85],
                          "mcca_g": [0.7, 0.75, 0.6]})
    meta = {"K": 9, "M": 4, "positions": "last", "python_version": "3.12"}
    rows = [{"slot": s, "measure": m, "components": c, "layer": s, "mean": 0.9 - 0.1 * s,
             "min": 0.8 - 0.1 * s, "max": 0.95 - 0.1 * s, "head_input": s == 3,
             "tau_mean": 0.1}
            for s in range(4) for m, c in (("svcca", 2), ("svcca", 4), ("cka", 4), ("mcca", 4))]
    layers_meta = {"models": [{"name": "a"}, {"name": "b"}], "positions": "last"}
    return [seed_pairs_figure(pairs, meta), layers_figure(pd.DataFrame(rows), layers_meta)]


def prh_figures() -> list[Figure]:
    from repdist.figures.prh import alignment_figure, matrix_figure

    rows = [{"language": f"l{i}", "performance": 0.1 * i, "vision": f"{family}-{size}",
             "family": family, "vision_parameters": size * 1e6, "metric": "mutual_knn",
             "score": 0.1 + 0.02 * i + 0.01 * size, "calibrated": 0.05 * i, "tau": 0.08,
             "significant": i % 2 == 0}
            for family in ("vit", "dino") for size in (5, 80) for i in range(4)]
    table = pd.DataFrame(rows)
    return [alignment_figure(table, ["vit", "dino"]), matrix_figure(table, ["vit", "dino"])]


def cpc_examples() -> dict[str, np.ndarray]:
    return {"images": np.zeros((1, 1, 8, 8)), "top": np.zeros((1, 1, 4, 8)),
            "bottom": np.zeros((1, 1, 4, 8)), "top_at": np.zeros((1, 2), int),
            "bottom_at": np.array([[4, 0]])}


def cpc_figures() -> list[Figure]:
    from repdist.figures.roeder_cpc import cpc_figure

    rows = []
    for panel, xs in (("b", (0, 50, 100)), ("c", (25, 50, 100)), ("d", (8, 16, 32))):
        for i, x in enumerate(xs):
            row = {"panel": panel, "x": x, "pairs": 2}
            for side, shift in (("f", 0.0), ("g", 0.05)):
                mean = 0.4 + 0.1 * i + shift
                row.update({f"mcca_{side}_mean": mean, f"mcca_{side}_se": 0.02,
                            f"mcca_{side}_ci_low": mean - 0.05, f"mcca_{side}_ci_high": mean + 0.05,
                            f"mcca_{side}_tau_mean": 0.15, f"mcca_{side}_untrained_mean": 0.3,
                            f"cca_{side}_1": mean + 0.1, f"cca_{side}_2": mean - 0.1})
            rows.append(row)
    return [cpc_figure(cpc_examples(), pd.DataFrame(rows), "t")]


def words_figures() -> list[Figure]:
    from repdist.figures.roeder_words import roeder_words_figure
    from repdist.measures.probe import linear_fit

    rng = np.random.default_rng(RNG_SEED)
    q_a = rng.normal(size=(12, 2))
    q_b = q_a @ np.array([[2.0, 0.0], [1.0, 1.0]])
    fit = SimpleNamespace(words=[f"w{i}" for i in range(12)], q_a=q_a, q_b=q_b,
                          mapped_b=q_a + 0.05 * rng.normal(size=q_a.shape), r2=np.ones(2))
    f_a = rng.normal(size=(100, 2))
    contexts = linear_fit("", f_a, f_a @ np.array([[0.0, 1.0], [1.0, 0.0]]))
    return [roeder_words_figure(fit, [0, 1], "note", contexts)]


def workshop_figures() -> list[Figure]:
    from repdist.figures.constructed_workshop import workshop_figure, workshop_lengths_figure
    from repdist.models.constructed import workshop_models

    models = workshop_models(np.random.default_rng(RNG_SEED), 20)
    return [workshop_figure(models, 0.5), workshop_lengths_figure(np.geomspace(1, 1e4, 50))]


FIGURES: dict[str, Callable[[], list[Figure]]] = {
    "synthetic widths": width_figures, "synthetic": synthetic_figures, "cifar": cifar_figures,
    "logit_distance": logit_distance_figures, "bound and models": bound_figures,
    "dynamics": dynamics_figures, "distillation": distillation_figures,
    "linear_fit": linear_fit_figures, "lm": lm_figures, "prh_study": prh_figures,
    "roeder_cpc": cpc_figures, "roeder_words": words_figures, "workshop": workshop_figures,
}


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.mark.parametrize("kind", FIGURES)
def test_every_figure_kind_reads_at_a_glance(kind):
    problems = {f"figure {i}": legibility_problems(fig)
                for i, fig in enumerate(FIGURES[kind]())}
    assert not any(problems.values()), problems


def test_every_module_of_figures_is_drawn_here():
    """A new figure module is drawn here too: each is imported by one of the builders."""
    import inspect
    from pathlib import Path

    import repdist.figures as package

    modules = {p.stem for p in Path(package.__file__).parent.glob("*.py")} - {"__init__", "style"}
    sources = "\n".join(inspect.getsource(build) for build in FIGURES.values())
    assert {m for m in modules if f"repdist.figures.{m} import" not in sources} == set()
