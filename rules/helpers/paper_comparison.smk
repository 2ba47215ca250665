# Helpers of rules/paper_comparison.smk.


def config_file_names():
    """The run's config files, as the paper comparison's first line names them: config.yaml
    first, then the overlays in their order; a file in the checkout by its path there.
    """
    base = Path(workflow.basedir).resolve()
    names = []
    for given in workflow.configfiles:
        path = Path(given).resolve()
        names.append(
            str(path.relative_to(base)) if path.is_relative_to(base) else str(given)
        )
    return sorted(names, key=lambda name: name != "config.yaml")
