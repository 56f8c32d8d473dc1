"""(op family: filled in below)"""
