import type { Phrases } from './types.js';

export const en: Phrases = {
  welcome: [
    "Hi everyone, welcome back to the show. I'm {me}, and I'm here with {you}. Today we're talking about \"{title}\".",
    "Hello and welcome! I'm {me}, joined as always by {you}, and today's topic is \"{title}\".",
    "Welcome, listeners. This is {me}, with my co-host {you}. We've got \"{title}\" on the table today.",
  ],
  reply: ["Thanks, {you}. I've been looking forward to this one.", "Great to be here, {you}. There's a lot to unpack.", "Hi {you}, hi everyone. Let's get into it."],
  styles: [
    ["Think of this as a short lesson: we'll go step by step.", '{you}, can you walk us through the basics here?', 'That makes it much clearer, {you}.'],
    ["I'll be asking the questions today, and {you} has the answers.", '{you}, in your view, what matters most here?', 'Interesting answer, {you}.'],
    ["We're going deep today, so stay with us.", "{you}, let's dig underneath that. What's really going on?", "That's a subtle point, {you}, worth pausing on."],
    ["This one is a real story, so let's tell it from the start.", 'So what happened next, {you}?', 'What a turn, {you}.'],
    ["Here are today's headlines.", '{you}, what are the facts we know so far?', 'Noted. That is the key development.'],
    ["Grab a coffee, this is going to be fun.", "Okay {you}, spill it. What's the story?", 'No way, {you}! I love that.'],
    ["Today's conversation is about what we can learn and take into our own lives.", "{you}, what's the lesson for our listeners here?", "That's something we can all use, {you}."],
    ["Fair warning: we will not be taking this entirely seriously.", "{you}, please tell me this gets funnier.", "Ha! {you}, you can't make this stuff up."],
    ["Today we roast it, lovingly. Nothing is safe.", "Alright {you}, what's the most roastable part?", "Oh come on, {you}, that's almost too easy."],
  ],
  ask: ['{you}, what does the source say about {topic}?', 'So {you}, where does {topic} come in?', 'Tell us about {topic}, {you}.'],
  askPlain: ['And what comes after that, {you}?', 'Where does the piece go from there, {you}?', "What's the part people tend to miss, {you}?", 'So what else is in there?', "{you}, what's the next key point?", 'What else should people know, {you}?', "What's the bigger picture here, {you}?", "Is there a detail in there that surprised you?", "How does the source back that up, {you}?", "And what follows from that?", "{you}, what's the practical upshot?", "Does it say anything about why?", "Where does that leave us, {you}?"],
  explain: ["So here's the thing. {text}", 'Okay. {text}', 'The way the source puts it: {text}', 'Sure, {you}. In short: {text}', 'Right. {text}', 'Good question. {text}'],
  more: ['Can you say a bit more about that, {you}?', 'Go on, {you}.'],
  react: ["Huh, that's a good way to put it.", 'Okay, that clears it up.', 'I like that detail.', 'Right, that follows.', 'Fair enough.', 'That really puts it in perspective, {you}.', 'I had no idea, {you}.', 'Makes sense.'],
  onward: ["And there's more to it. {text}", "Another thing worth mentioning: {text}", "It goes further, actually. {text}", "Oh, and here's a part I really liked. {text}", "Something else stood out to me. {text}", "Then the source turns to this. {text}", "Let me add one thing, {you}. {text}"],
  bring: ["Something caught my eye here, {you}. {text}", "I want to read you a line from this. {text}", "Here's a part I found interesting. {text}", "Let me bring up another bit. {text}", "I marked this passage, {you}. {text}", "And then there is this. {text}", "Listen to this one. {text}"],
  transition: ["Let's keep going.", "Here's another piece of it.", 'Moving along.', "Let's move on to the next part.", 'Okay, next up.', "That brings us to another point."],
  recap: ['So, to recap, {you}: we covered {n} key points from "{title}".', 'Let me sum up, {you}. Those were the {n} big ideas from "{title}".'],
  signoff: ["That's all for today. Thanks for listening, and see you next time!", "And that's a wrap. Thanks for tuning in, everyone!"],
  thanks: ['Thanks, {you}, this was great.', 'Always a pleasure, {you}. Bye for now!'],
  shortNote: "It's a short piece, so this will be a quick one.",
  sections: { intro: 'Introduction', point: 'Key point', recap: 'Recap', outro: 'Sign-off' },
};
