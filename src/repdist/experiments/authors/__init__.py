"""The authors' checkpoints: downloaded, extracted and compared with ours."""
