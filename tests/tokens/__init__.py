"""Tests of the tokens stage: estimators, the estimation benchmark and its meter, context windows."""
