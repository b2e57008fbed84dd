"""The offline plan: run the real program under the mock engine, show and write what it registers."""
