"""`python -m agents.deck`: the deck export's command, at the name the project's commands have always used (code: `deck.export`)."""

from deck.export import main

if __name__ == "__main__":
    raise SystemExit(main())
