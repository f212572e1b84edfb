"""Benchwarmers' library: everything behind the gateway, the dashboard and the scripts.

Each module has one job (paths, file safety, keys, calling models, the panel...);
import them as `from metrics import paths`.
"""

__version__ = "0.1.0"
