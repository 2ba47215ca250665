"""The paper comparison's verdicts by the run's scale: a toy run judges the checks that hold at
any scale and leaves the paper's trends unjudged, naming the run that judges them; a check
over zero pairs or items is no data, never a pass; the page's first line names the run."""

from pathlib import Path

import pandas as pd
import pytest

from repdist.experiments.logit_distance.tables import follow_up_checks
from repdist.experiments.paper_comparison.checks import (
    NO_DATA,
    NOT_JUDGED,
    PAPER_SCALE,
    TOY,
    VERDICTS,
    Check,
    bound_checks,
    comparison_frame,
    comparison_markdown,
    kl_table_checks,
    roeder_checks,
    run_title,
    tightness_checks,
    width_checks,
)

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("make run-synthetic", "make run-logit-distance", "make run", "snakemake ")


def kl_table(kl_at_1: float = 0.7876) -> pd.DataFrame:
    """Table 1 as the paper prints it (`kl_at_1`: its first KL, 0.7876 in the paper)."""
    return pd.DataFrame({"rho": [1.0, 20.0], "kl": [kl_at_1, 0.0], "d_llv": [1.3178, 1.3178],
                         "mcca_f": [0.0005, 0.0005], "max_d_svd_f": [0.9997, 0.9997]})


def sweep(above: bool = False, in_range: bool = True) -> pd.DataFrame:
    """A constructed sweep: pairs inside the bound's range (d_LLV < 1/4) unless not
    `in_range`, one above d_fg <= 4 d_LLV when `above`."""
    d_llv = [0.1, 0.2] if in_range else [0.5, 0.9]
    return pd.DataFrame({"d_llv": d_llv, "d_fg": [0.5 if above else 0.1, 0.3]})


def widening_summary() -> dict[str, pd.DataFrame]:
    """A width summary whose distances grow with width: the paper's trend fails."""
    return {"d_llv_vs_width_K4": pd.DataFrame({
        "num_classes": [4, 4], "width": [16, 32], "seeds": [3, 3],
        "d_llv_mean": [0.2, 0.3], "d_fg_mean": [0.2, 0.4]})}


def rising_curves() -> pd.DataFrame:
    """Roeder's Fig. 2b curve still rising long after 4,000 steps: the claim fails."""
    return pd.DataFrame({"noise_dims": 0, "step": [0, 2000, 4000, 6000, 8000],
                         "mcca_f_mean": [0.2, 0.5, 0.7, 0.8, 0.95], "mcca_f_sd": 0.01})


def students(l1_better: bool = False, f1_holds: bool = True) -> pd.DataFrame:
    """The follow-up's final table: KL, L1 and L2 students of one teacher, two seeds."""
    rows = []
    for loss, gain in (("kl", 0.0), ("l1", 0.1 if l1_better else -0.1), ("l2", -0.1)):
        for seed, wobble in ((0, 0.0), (1, 0.01)):
            rows.append({"loss": loss, "teacher_seed": 0, "seed": seed,
                         "mcca_f_calibrated": 0.5 + gain + wobble, "d_rep": 0.5 - gain - wobble,
                         "f1_holds": f1_holds, "f1_slack": 0.1})
    return pd.DataFrame(rows)


def failing_run() -> list[Check]:
    """Checks of a run where every trend fails and every any-scale check holds."""
    return (kl_table_checks(kl_table()) + bound_checks({4: sweep()}, sweep())
            + width_checks(widening_summary()) + roeder_checks(rising_curves())
            + follow_up_checks(students(), "spirals"))


def test_a_toy_run_leaves_every_trend_unjudged_and_names_the_run_that_judges_it():
    checks = failing_run()
    trends = [c for c in checks if c.judged_by]
    assert len(trends) == 2 + 1 + 4  # width (d_LLV, d_fg), Roeder 2b, follow-up (2 x 2)
    assert all(c.verdict == "FAIL" for c in trends)  # at paper scale they fail
    toy = comparison_frame(checks, TOY)
    rows = toy[[bool(c.judged_by) for c in checks]]
    assert (rows["verdict"] == NOT_JUDGED).all() and "FAIL" not in set(toy["verdict"])
    assert all(any(cmd in t for cmd in COMMANDS) for t in rows["tolerance"])
    assert rows["tolerance"].str.contains("judged at paper scale: make ").all()


def test_at_paper_scale_the_verdicts_are_the_checks_own():
    checks = failing_run()
    paper = comparison_frame(checks, PAPER_SCALE)
    assert list(paper["verdict"]) == [c.verdict for c in checks]
    assert list(paper["tolerance"]) == [c.tolerance for c in checks]
    assert NOT_JUDGED not in set(paper["verdict"])
    assert (paper["verdict"] == "FAIL").sum() == 7


@pytest.mark.parametrize("broken", [
    kl_table_checks(kl_table(kl_at_1=0.9)),
    bound_checks({4: sweep(above=True)}, None),
    bound_checks({4: sweep()}, sweep(above=True)),
    follow_up_checks(students(l1_better=True, f1_holds=False), "spirals")[-1:],
], ids=["Table 1", "bound, constructed", "bound, trained", "Theorem F.1"])
def test_a_check_that_holds_at_any_scale_still_fails_at_toy_scale(broken):
    toy = comparison_frame(broken, TOY)
    assert "FAIL" in set(toy["verdict"])
    assert NOT_JUDGED not in set(toy["verdict"])


def test_a_check_over_zero_pairs_is_no_data_never_a_pass():
    empty_final = students().iloc[0:0]
    tightness = pd.DataFrame({"M": [2], "configurations": [3], "ratio_q50": [0.1],
                              "ratio_q99": [0.2], "ratio_max": [0.3], "violations": [0],
                              "pairs_in_range": [0]})
    checks = (bound_checks({4: sweep(in_range=False)}, sweep(in_range=False))
              + tightness_checks(tightness) + follow_up_checks(empty_final, "spirals"))
    assert [c.ours for c in checks[:3]] == ["0 of 0"] * 3
    for scale in (TOY, PAPER_SCALE):
        frame = comparison_frame(checks, scale)
        assert (frame["verdict"] == NO_DATA).all()
        assert frame["tolerance"].str.contains("no data: no (?:pair|student)").all()


def test_the_pages_first_line_names_the_run_and_its_scale():
    run = run_title("results/quick", ["config.yaml", "config.quick.yaml"], TOY)
    page = comparison_markdown(comparison_frame(failing_run(), TOY), "paper", run, TOY)
    lines = page.splitlines()
    assert lines[0] == ("# Reproduced vs paper: results/quick (config.yaml + config.quick.yaml), "
                        "toy scale")
    assert "not judged here" in page and "Training protocol of this run: `paper`" in page
    assert "7 not judged at toy scale" in page and "0 FAIL" in page
    paper = comparison_markdown(comparison_frame(failing_run()), "paper",
                                run_title("results", ["config.yaml"], PAPER_SCALE))
    assert paper.splitlines()[0] == "# Reproduced vs paper: results (config.yaml), paper scale"
    assert "not judged here" not in paper and "7 FAIL" in paper


def test_the_page_explains_every_verdict_it_can_give():
    page = comparison_markdown(comparison_frame(failing_run(), TOY), run="r", scale=TOY)
    legend = page.split("Verdicts:")[1]
    assert all(f"- {word}: " in legend for word in VERDICTS)
    assert set(VERDICTS) == {"pass", "FAIL", "explained", "informational", NOT_JUDGED, NO_DATA}


def test_the_quick_config_marks_its_run_toy_scale_and_the_others_paper_scale():
    import yaml

    def scale(*names: str) -> str:
        config: dict = {}
        for name in names:
            config.update(yaml.safe_load((ROOT / name).read_text()))
        return config["scale"]

    assert scale("config.yaml") == scale("config.yaml", "config.synthetic.yaml") == PAPER_SCALE
    assert scale("config.yaml", "config.quick.yaml") == TOY
