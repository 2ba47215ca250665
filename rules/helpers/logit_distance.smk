# Helpers of rules/logit_distance.smk: each helper takes the data set's name (`spirals`, `sub`,
# `cifar100`).
LOGIT = config["logit_distance"]
LOGIT_GPU = GPU_PLAN.uses_gpu(LOGIT["device"])
SUB = LOGIT["sub"]
CIFAR100 = LOGIT["cifar100"]
CIFAR100_FILES = ("train", "test", "meta")  # cifar-100-python's (data.cifar100.ARCHIVE)
# the data sets this run holds: the spirals always, SUB and CIFAR-100 when on
LOGIT_SETS = (
    ["spirals"]
    + (["sub"] if SUB["enabled"] else [])
    + (["cifar100"] if CIFAR100["enabled"] else [])
)
# each data set's name in titles and the paper comparison's rows
LOGIT_SET_NAMES = {"spirals": "spirals", "sub": "SUB", "cifar100": "CIFAR-100"}
# a training job's memory at paper scale, MB (max_job_mem_mb caps it: training_jobs.job_mem_mb)
LOGIT_MEM_MB = {
    "spirals": {"teachers": 4000, "students": 6000},
    "sub": {"teachers": 8000, "students": 12000},
    "cifar100": {"teachers": 8000, "students": 12000},
}


def logit_set_names():
    """Each data set's name in the paper comparison's rows (a stand-in said so)."""
    standin = {"spirals": False, "sub": SUB["standin"], "cifar100": CIFAR100["standin"]}
    return {
        d: LOGIT_SET_NAMES[d] + (" stand-in" if standin[d] else "") for d in LOGIT_SETS
    }


def logit_file(dataset, name):
    """A file of one data set's follow-up experiment."""
    return out(f"logit_distance/{dataset}/{name}")


def logit_table(dataset, kind):
    """One of a data set's tables: `snapshots`, `final` or `summary`."""
    return out(f"tables/logit_distance_{dataset}_{kind}.csv")


def logit_figure(dataset, kind):
    """The outputs of one of a data set's figures (`metrics` or `bound`): `<kind>_pdf` and
    `<kind>_png`, shown in the report."""
    return figure(
        f"logit_distance_{dataset}_{kind}",
        f"logit_distance_{kind}",
        "Beyond the paper",
        prefix=f"{kind}_",
        subcategory="The follow-up: logit distance",
    )


def logit_figure_title(dataset):
    """The title of a data set's figures."""
    return f"Follow-up, {LOGIT_SET_NAMES[dataset]}"


def logit_distance_targets():
    """What logit_distance_all builds: each data set's final table, summary and figures."""
    tables = [logit_table(d, kind) for d in LOGIT_SETS for kind in ("final", "summary")]
    figures = [
        figure_files(f"logit_distance_{d}_{kind}")
        for d in LOGIT_SETS
        for kind in ("metrics", "bound")
    ]
    return tables + figures


def logit_mem_mb(dataset, kind):
    """The memory a data set's `teachers` or `students` job asks for, MB."""
    return training_jobs.job_mem_mb(config, LOGIT_MEM_MB[dataset][kind])


def logit_teacher_files(dataset):
    """One file per teacher, in teacher_seeds order."""
    seeds = LOGIT[dataset]["teacher_seeds"]
    return lambda name: [logit_file(dataset, f"teachers/seed{t}/{name}") for t in seeds]


def logit_members(dataset):
    """Every student as (teacher seed, loss, seed), teacher-major then loss then seed: the
    order of its stack (experiments.logit_distance.training.students_of)."""
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
    """The data set's FollowUpArch fields (the teacher's: SUB's has its concept probe), or
    CIFAR-100's teacher's ResNetArch fields (the students share its width)."""
    if dataset == "cifar100":
        return {**CIFAR100["teacher"], "num_classes": 100, "width": CIFAR100["width"]}
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


def logit_resnet_settings(dataset):
    """CIFAR-100's settings beyond the teacher's architecture (None for the MLP data sets)."""
    if dataset != "cifar100":
        return None
    keys = ("imagenet_weights", "eval_batch_size", "teacher_in_order")
    return {
        **{key: CIFAR100[key] for key in keys},
        "student_depth": CIFAR100["student"]["depth"],
    }


def logit_probe_seed(dataset):
    """The seed of SUB's concept probe (None for the data sets without concepts)."""
    return LOGIT[dataset].get("probe_seed")


def logit_eval_every(dataset):
    """Epochs between a data set's snapshots (CIFAR-100's own key; else the shared one)."""
    return LOGIT[dataset].get("eval_every_epochs", LOGIT["eval_every_epochs"])


def cifar100_folder():
    """The cifar-100-python folder the CIFAR-100 rules read: the stand-in, `root`, or the
    download's."""
    if CIFAR100["standin"]:
        return logit_file("cifar100", "standin/cifar-100-python")
    return CIFAR100["root"] or f"{CIFAR100['resources']}/cifar-100-python"


def logit_data_file(dataset):
    """The data set's data: the spirals' npz, SUB's features (the file given, else the one
    logit_distance_sub_features makes), or CIFAR-100's training file (its folder read whole).
    """
    if dataset == "spirals":
        return logit_file("spirals", "data/spirals.npz")
    if dataset == "cifar100":
        return f"{cifar100_folder()}/train"
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
    cores, scaled by the width squared; CIFAR-100's ResNet-50 ~0.3 s and ResNet-18 ~0.1 s a
    step of 32 images at width 64, scaled by the width squared), twice; on a GPU far less (a
    twentieth assumed for the ResNets).
    """
    settings = LOGIT[dataset]

    def minutes(wildcards, attempt=1):
        if dataset == "cifar100":
            points = CIFAR100["standin_train"] if CIFAR100["standin"] else 50000
            per_epoch = -(-points // settings["training"]["batch_size"])
            if kind == "teachers":
                models, epochs, cost = (
                    len(settings["teacher_seeds"]),
                    settings["teacher_epochs"],
                    0.3,
                )
            else:
                models, epochs, cost = (
                    len(logit_members(dataset)),
                    settings["student_epochs"],
                    0.1,
                )
            cost = cost * (CIFAR100["width"] / 64) ** 2 / (20 if LOGIT_GPU else 1)
            return int(10 + 2 * models * epochs * per_epoch * cost / 60) * attempt
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
