"""The tokens stage: tokenizers, estimators, calibration, context windows and the estimation benchmark."""
