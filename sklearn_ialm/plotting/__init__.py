from .np_roc import NPROCDisplay

__all__ = ["NPROCDisplay"]
