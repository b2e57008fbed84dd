"""Region pre-flight: can this stack's region run it? Pure checks over plain facts; the AWS calls
that gather the facts sit behind a thin boto3 boundary (`aws.py`)."""
