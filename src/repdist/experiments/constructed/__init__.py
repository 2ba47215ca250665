"""The constructed models: hand-built pairs with known distances and bounds."""
