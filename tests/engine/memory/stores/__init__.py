"""Tests of the memory stores: the contracts every backend passes, and each store beyond them."""
