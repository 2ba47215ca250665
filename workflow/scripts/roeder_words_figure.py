"""Rule roeder_words_figure: Roeder et al.'s Fig. 1, the shown words under two seeds and the
second's mapped onto the first's (fitted on every other word), with the fit's R^2, and f on
held-out contexts mapped the same way (fitted on the other half), as the caption says."""

from repdist.experiments.roeder.words_pairs import (
    fit_table,
    shown_words,
    word_vectors,
    words_fit,
)
from repdist.figures.roeder_words import roeder_words_figure
from repdist.figures.style import save_figure
from repdist.io import read_csv, read_table_metadata, table_provenance, write_csv
from repdist.io.representations import load_representations
from repdist.measures.probe import linear_fit
from repdist.pipeline.joblog import job_log

sm = snakemake  # noqa: F821 (injected by Snakemake)
with job_log(sm.log[0]) as log:
    vocabulary = read_csv(sm.input.vocabulary)
    (f_a, g_a), (f_b, g_b) = (load_representations(e, u) for e, u in
                              zip(sm.input.embeddings, sm.input.unembeddings, strict=True))
    q_a, q_b = (word_vectors(g, sm.params.rep_dim) for g in (g_a, g_b))
    fit = words_fit(vocabulary, shown_words(vocabulary, sm.params.shown), q_a, q_b)
    # f on the held-out contexts, as the pairs table's r2_f: fitted on one half, drawn on the other
    rep_dim = sm.params.rep_dim
    contexts = linear_fit("", f_a[:, :rep_dim], f_b[:, :rep_dim])
    log.info("f on held-out contexts: R^2 of b mapped onto a per dimension: %s", contexts.r2)
    log.info("%d words shown, R^2 of b mapped onto a per dimension: %s", len(fit.words), fit.r2)
    corpus = read_table_metadata(sm.input.vocabulary).get("corpus", "?")
    note = f"corpus {corpus}, {len(vocabulary)} words"
    write_csv(sm.output.table, fit_table(fit, sm.params.seeds),
              table_provenance(sm.config, experiment="roeder_words_fit", corpus=corpus,
                               r2=list(fit.r2)))
    save_figure(roeder_words_figure(fit, sm.params.seeds, note, contexts),
                [sm.output.pdf, sm.output.png])
