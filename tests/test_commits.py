"""The commit-message rule that CI holds every new commit to (repdist_dev.commits)."""

from repdist_dev.commits import MAX_SUBJECT, check_message


def test_a_short_subject_with_its_detail_in_the_body_passes():
    assert check_message("Read rows by identity\n\nThe detail, as long as it needs.\n") == []
    assert check_message("x" * MAX_SUBJECT) == []


def test_a_long_subject_or_a_body_without_a_blank_line_is_named():
    assert check_message("x" * (MAX_SUBJECT + 1)) == [
        f"the subject has {MAX_SUBJECT + 1} characters (at most {MAX_SUBJECT})"]
    assert check_message("Subject\nbody at once") == [
        "no blank line between the subject and the body"]
    assert check_message("\n\nbody") == ["the subject is empty"]
