"""calling"""
