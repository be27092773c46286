"""The randomized wing (d_x-private sanitization of user profiles): the mechanisms, the
attacks on noisy profiles, the epsilon sweep, the profiles pipeline of `prudence assess`
(`randomized.assess`) and the randomized release."""
