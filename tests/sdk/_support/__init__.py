"""Helpers this folder's tests share (not collected: no test_ prefix)."""
