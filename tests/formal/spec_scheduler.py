def specs(configs):
    return []
