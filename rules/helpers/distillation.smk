# Helpers of rules/distillation.smk.
DISTILLATION = config["distillation"]
DISTILLATION_DIR = "distillation/K{K}_w{W}/{loss}"
DISTILLATION_TEACHERS = DISTILLATION["teacher_seeds"]


def distillation_configs():
    """(K, width) of every teacher configuration."""
    return [
        (k, w) for k in DISTILLATION["class_counts"] for w in DISTILLATION["widths"]
    ]


def student_file(name, **wildcards):
    """A file of one (K, width, loss)'s students; wildcards not given are left open."""
    fields = {key: wildcards.get(key, f"{{{key}}}") for key in ("K", "W", "loss")}
    return out(f"{DISTILLATION_DIR.format(**fields)}/{name}")


def student_seed_files(name):
    """One file per student of a (K, width, loss), named by its teacher's seed."""
    return [student_file(f"teacher{s}/{name}") for s in DISTILLATION_TEACHERS]


def teacher_models(wildcards):
    """The teachers' weights: this run's synthetic models, variant (0, 0)."""
    return [
        synthetic_file(f"seed{s}/model.pt", K=wildcards.K, W=wildcards.W, G=0, F=0)
        for s in DISTILLATION_TEACHERS
    ]


def distillation_tables():
    """Every teacher's and student's tables, keyed teacher_<kind> / student_<kind>, in
    configuration order (then loss order for the students), seed order within."""
    teachers = {kind: [] for kind in MODEL_TABLES}
    students = {kind: [] for kind in MODEL_TABLES}
    for k, w in distillation_configs():
        for kind, name in MODEL_TABLES.items():
            teachers[kind] += [
                synthetic_file(f"seed{s}/{name}", K=k, W=w, G=0, F=0)
                for s in DISTILLATION_TEACHERS
            ]
            for loss in DISTILLATION["losses"]:
                students[kind] += [
                    student_file(f"teacher{s}/{name}", K=k, W=w, loss=loss)
                    for s in DISTILLATION_TEACHERS
                ]
    return {
        **{f"teacher_{kind}": files for kind, files in teachers.items()},
        **{f"student_{kind}": files for kind, files in students.items()},
    }


def distillation_runtime(wildcards, attempt=1):
    """Minutes for one job: as a synthetic job of as many seeds, twice (the distillation loss
    runs unfused)."""
    return training_runtime(
        wildcards, attempt, 2 * len(DISTILLATION_TEACHERS) / SYNTHETIC["n_seeds"]
    )
