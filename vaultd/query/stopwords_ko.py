"""Korean stop words: the function words of a question (어떻게, 다른, 바로, 에서 ...) weigh
little in a query of other words, as Snowball's English stop words do (see query.analysis.STOP).

The words are the ranks.nl Korean list as stopwords-iso publishes it
(github.com/stopwords-iso/stopwords-ko, raw/ranksnl-korean.txt), less what a query's run
of Hangul cannot be (phrases, and words of one syllable, which have no bigram to search
by) and less its content words (CONTENT: weighed a quarter, `양자 암호` ranked a note on
passwords above one on quantum cryptography). A run is one of them as it is or with one
particle after it (어떻게, 무엇을, syncthing에서: 에서).
"""

CONTENT = frozenset("""
    시간 시각 무렵 자신 자기 자기집 전자 양자 기타 아이 이상 다수 여부 전부 하나 혼자 타인 옆사람 소생
    소인 남들 다음 전후 다섯 여섯 일곱 여덟 아홉 이천육 이천칠 이천팔 이천구 좋아 비슷하다 놀라다
    구토하다 게우다 토하다 메쓰겁다 도착하다 도달하다 연관되다 오르다 타다 향하다
""".split())
"""The list's nouns, numerals, verbs and adjectives a person searches for (시간 time, 양자
quantum, 기타 guitar, 아이 child, 좋아 of 좋아하고, ...): not function words here."""

WORDS = frozenset("""
    가까스로 가령 각각 각자 각종 갖고말하자면 같다 같이 개의치않고 거니와 거바 거의 것들 게다가 게우다 겨우 견지에서 결국 겸사겸사 고려하면 고로 공동으로 과연
    관계없이 관하여 관한 관해서는 구체적으로 구토하다 그들 그때 그래 그래도 그래서 그러나 그러니 그러니까 그러면 그러므로 그러한즉 그런데 그런즉 그럼 그렇지
    그렇지만 그렇지않으면 그리고 그리하여 그만이다 그위에 그저 그중에서 근거로 근거하여 기대여 기점으로 기준으로 기타 까닭으로 까악 까지 까지도 꽈당 끙끙 끼익
    나머지는 남들 남짓 너희 너희들 놀라다 누구 다른 다만 다섯 다소 다수 다시말하면 다음 다음에 다음으로 단지 답다 당신 당장 대하면 대하여 대해서 댕그 더구나
    더군다나 더라도 더불어 더욱더 더욱이는 도달하다 도착하다 동시에 동안 된바에야 된이상 두번째로 둥둥 뒤따라 뒤이어 든간에 등등 딩동 따라 따라서 따위 때문에
    또한 뚝뚝 로부터 로써 마음대로 마저 마저도 마치 막론하고 만약 만약에 만일 만큼 말하자면 매번 메쓰겁다 모두 무렵 무릎쓰고 무슨 무엇 무엇때문에 물론
    바꾸어말하면 바꾸어말하자면 바로 바와같이 반대로 반드시 버금 보는데서 보다더 보드득 본대로 봐라 부터 불구하고 불문하고 붕붕 비걱거리다 비교적 비로소 비록
    비슷하다 비하면 뿐만아니라 뿐이다 삐걱 삐걱거리다 생각한대로 설령 설마 설사 소생 소인 습니까 습니다 시각 시간 시작하여 시초에 시키다 실로 심지어 아니
    아니나다를가 아니라면 아니면 아니었다면 아래윗 아무거나 아무도 아야 아울러 아이 아이고 아이구 아이야 아이쿠 아하 아홉 알았어 앞에서 앞의것 약간 양자
    어기여차 어느 어느것 어느곳 어느때 어느쪽 어느해 어디 어때 어떠한 어떤 어떤것 어떤것들 어떻게 어떻해 어이 어째서 어쨋든 어찌 어찌됏든 어찌됏어 어찌하든지
    어찌하여 언제 언젠가 얼마 얼마간 얼마나 얼마든지 얼마만큼 얼마큼 엉엉 에게 에서 여기 여덟 여러분 여보시오 여부 여섯 여전히 여차 연관되다 연이서 영차
    옆사람 예컨대 예하면 오로지 오르다 오자마자 오직 오호 오히려 와르르 와아 왜냐하면 외에도 요만큼 요만한걸 요컨대 우르르 우리 우리들 우선 운운 위하여 위해서
    윙윙 으로 으로서 으로써 응당 의거하여 의지하여 의해 의해되다 의해서 이것 이곳 이때 이라면 이래 이러이러하다 이러한 이런 이럴정도로 이렇게되면 이렇게말하자면
    이렇구나 이르기까지 이리하여 이만큼 이번 이봐 이상 이어서 이었다 이와같다면 이외에도 이용하여 이유만으로 이젠 이지만 이쪽 이천구 이천육 이천칠 이천팔 인젠
    일것이다 일곱 일단 일때 일반적으로 일지라도 입각하여 입장에서 잇따라 있다 자기 자기집 자마자 자신 잠깐 잠시 저것 저것만큼 저기 저쪽 저희 전부 전자 전후
    제각기 제외하고 조금 조차 조차도 졸졸 좋아 좍좍 주룩주룩 줄은모른다 중에서 중의하나 즈음하여 즉시 지든지 지만 지말고 진짜로 쪽으로 차라리 참나 첫번째로
    총적으로 콸콸 쾅쾅 타다 타인 탕탕 토하다 통하여 틈타 펄렁 하게될것이다 하게하다 하겠는가 하고있었다 하곤하였다 하구나 하기는한데 하기보다는 하기에 하나
    하느니 하는것도 하는바 하더라도 하도다 하도록시키다 하도록하다 하든지 하려고하다 하마터면 하면된다 하면서 하물며 하여금 하여야 하자마자 하지마 하지마라 하지만
    하하 한다면 한데 한마디 한적이있다 한켠으로는 한항목 할때 할만하다 할망정 할뿐 할수있다 할수있어 할줄알다 할지라도 할지언정 함께 해도된다 해도좋다 해봐요
    해야한다 해요 했어요 향하다 향하여 향해서 허걱 허허 헉헉 헐떡헐떡 혹시 혹은 혼자 훨씬 휘익 흐흐 힘입어
""".split()) - CONTENT

PARTICLES = ("으로", "에서", "에게", "까지", "부터", "이랑", "하고", "을", "를", "이", "가", "은", "는", "의", "에", "로",
             "와", "과", "도", "만", "요")
"""Particles a word may carry in a query, the two-syllable ones first."""


def is_stop(run: str) -> bool:
    """Whether a run of Hangul is a stop word, as it is or less one particle."""
    return run in WORDS or any(run.endswith(p) and run[: -len(p)] in WORDS for p in PARTICLES)
