// placeholder until the composition root lands
