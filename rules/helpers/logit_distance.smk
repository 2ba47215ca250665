# Helpers of rules/logit_distance.smk.
LOGIT = config["logit_distance"]
SPIRALS = LOGIT["spirals"]
LOGIT_GPU = GPU_PLAN.uses_gpu(LOGIT["device"])


def logit_file(name):
    """A file of the follow-up's spirals experiment."""
    return out(f"logit_distance/spirals/{name}")


def spirals_teacher_files(name):
    """One file per teacher, in teacher_seeds order."""
    return [logit_file(f"teachers/seed{t}/{name}") for t in SPIRALS["teacher_seeds"]]


def spirals_members():
    """Every student as (teacher seed, loss, seed), teacher-major then loss then seed: the
    order of its stack (experiments.logit_distance.students_of)."""
    return [
        (t, loss, s)
        for t in SPIRALS["teacher_seeds"]
        for loss in SPIRALS["losses"]
        for s in SPIRALS["student_seeds"]
    ]


def spirals_student_files(name):
    """One file per student, in spirals_members order."""
    return [
        logit_file(f"students/{loss}/teacher{t}_seed{s}/{name}")
        for t, loss, s in spirals_members()
    ]


def logit_model_settings():
    """The spirals models' FollowUpArch fields."""
    model, data = SPIRALS["model"], SPIRALS["data"]
    return {**model, "in_dim": 2, "num_classes": data["n_labels"]}


def logit_runtime(kind):
    """Minutes for a training job of the follow-up on a CPU (~20 ms a 512-wide model-step on
    2 cores, 28 steps an epoch of 14,000 points), twice; on a GPU far less."""

    def minutes(wildcards, attempt=1):
        data = SPIRALS["data"]
        points = data["n_labels"] * data["n_spirals"] * data["n_per_arm"] // 2
        per_epoch = -(-points // SPIRALS["training"]["batch_size"])
        if kind == "teachers":
            models, epochs = len(SPIRALS["teacher_seeds"]), SPIRALS["teacher_epochs"]
        else:
            models, epochs = len(spirals_members()), SPIRALS["student_epochs"]
        scale = (SPIRALS["model"]["hidden"] / 512) ** 2
        return int(10 + 2 * models * epochs * per_epoch * 0.02 * scale / 60) * attempt

    return minutes
