"""The lab: experiments, the runner, aggregation of results, and reports."""
