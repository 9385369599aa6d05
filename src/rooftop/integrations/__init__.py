"""Patching other libraries' models to run rooftop's ops (hf: Hugging Face transformers)."""
