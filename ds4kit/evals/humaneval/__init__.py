"""`ds4kit eval humaneval`: HumanEval+ pass@1 through evalplus (its prompts, sanitiser and
test runner), generation through a target first, grading after in a sandbox per sample.

dataset.py (which problems), prompts.py + generation.py (the model's samples), sandbox.py +
sandbox_worker.py (running untrusted code contained), categories.py (the failure taxonomy),
grading.py (every sample, in parallel, resumable), output.py (results, summary, plot), job.py.
"""
