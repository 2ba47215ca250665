# Helpers of rules/logit_distance.smk: each helper takes the data set's name (`spirals`, `sub`).
LOGIT = config["logit_distance"]
LOGIT_GPU = GPU_PLAN.uses_gpu(LOGIT["device"])
SUB = LOGIT["sub"]
# the data sets this run holds: the spirals always, SUB when on (features, or the stand-in)
LOGIT_SETS = ["spirals"] + (["sub"] if SUB["enabled"] else [])


def logit_file(dataset, name):
    """A file of one data set's follow-up experiment."""
    return out(f"logit_distance/{dataset}/{name}")


def logit_teacher_files(dataset):
    """One file per teacher, in teacher_seeds order."""
    seeds = LOGIT[dataset]["teacher_seeds"]
    return lambda name: [logit_file(dataset, f"teachers/seed{t}/{name}") for t in seeds]


def logit_members(dataset):
    """Every student as (teacher seed, loss, seed), teacher-major then loss then seed: the
    order of its stack (experiments.logit_distance.students_of)."""
    settings = LOGIT[dataset]
    return [
        (t, loss, s)
        for t in settings["teacher_seeds"]
        for loss in settings["losses"]
        for s in settings["student_seeds"]
    ]


def logit_student_files(dataset):
    """One file per student, in logit_members order."""
    members = logit_members(dataset)
    return lambda name: [
        logit_file(dataset, f"students/{loss}/teacher{t}_seed{s}/{name}")
        for t, loss, s in members
    ]


def logit_model_settings(dataset):
    """The data set's FollowUpArch fields (the teacher's: SUB's has its concept probe)."""
    model = LOGIT[dataset]["model"]
    if dataset == "spirals":
        return {
            **model,
            "in_dim": 2,
            "num_classes": LOGIT["spirals"]["data"]["n_labels"],
        }
    return {
        **model,
        "in_dim": SUB["features_dim"],
        "num_classes": SUB["birds"],
        "concepts": SUB["attributes"],
        "xavier_head": True,
    }


def logit_data_file(dataset):
    """The data set's data: the spirals' npz, or SUB's features (the file given, else the one
    logit_distance_sub_features makes)."""
    if dataset == "spirals":
        return logit_file("spirals", "data/spirals.npz")
    return SUB["features"] or logit_file("sub", "data/sub_features.pt")


def sub_standin_inputs():
    """The stand-in's images and encoder where SUB's features come from them."""
    if not SUB["standin"]:
        return {}
    return {
        "images": logit_file("sub", "standin/images"),
        "encoder": logit_file("sub", "standin/encoder"),
    }


def sub_sources():
    """Where SUB's features are made from: the stand-in's folders, or the configured hub
    dataset (or folder) and encoder, at their revisions."""
    if SUB["standin"]:
        made = sub_standin_inputs()
        return {**made, "revision": None, "encoder_revision": None}
    keys = ("images", "revision", "encoder", "encoder_revision")
    return {key: SUB[key] for key in keys}


def logit_runtime(dataset, kind):
    """Minutes for a training job of the follow-up on a CPU (~25 ms a 512-wide model-step on 2
    cores, scaled by the width squared), twice; on a GPU far less."""
    settings = LOGIT[dataset]

    def minutes(wildcards, attempt=1):
        if dataset == "spirals":
            data = settings["data"]
            points = data["n_labels"] * data["n_spirals"] * data["n_per_arm"] // 2
        elif SUB["standin"]:
            points = SUB["birds"] * SUB["standin_per_bird"] * 56 // 100
        else:  # SUB's ~40,000 images, 56 % of them training points (an estimate)
            points = 22400
        per_epoch = -(-points // settings["training"]["batch_size"])
        if kind == "teachers":
            models, epochs = len(settings["teacher_seeds"]), settings["teacher_epochs"]
        else:
            models, epochs = len(logit_members(dataset)), settings["student_epochs"]
        scale = (settings["model"]["hidden"] / 512) ** 2
        return int(10 + 2 * models * epochs * per_epoch * 0.025 * scale / 60) * attempt

    return minutes
